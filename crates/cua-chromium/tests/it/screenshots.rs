//! Screenshots: metadata read from the bytes, and redaction painted before the capture.

use cua_snapshot::Bounds;
use cua_surface::{ScreenshotRequest, SurfaceDriver};

use crate::png::Image;
use crate::support::{Authority, Page, Site, find, goto, has, launch, observe_until};

const SECRET_PAGE: &str = r#"<html><head><title>Secret</title></head><body style="margin:0; background:#fff">
<div style="position:absolute; left:100px; top:100px; width:300px; height:60px; background:rgb(255,0,0); color:rgb(255,0,0)">Account 4111 1111</div>
<iframe src="/inner" style="position:absolute; left:500px; top:100px; width:300px; height:200px; border:0"></iframe>
</body></html>"#;

const INNER: &str = r#"<body style="margin:0"><div style="margin:20px; width:200px; height:80px; background:rgb(0,0,255); color:rgb(0,0,255)">SSN 078-05-1120</div><button>Inner</button></body>"#;

fn red(p: [u8; 4]) -> bool {
    p[0] > 240 && p[1] < 20 && p[2] < 20
}

fn blue(p: [u8; 4]) -> bool {
    p[2] > 240 && p[0] < 20 && p[1] < 20
}

fn black(p: [u8; 4]) -> bool {
    p[0] < 10 && p[1] < 10 && p[2] < 10
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regions_are_painted_over_before_the_capture_and_removed_after() {
    let site = Site::serve(vec![
        ("/", Page::html(SECRET_PAGE)),
        ("/inner", Page::html(INNER)),
    ])
    .await;
    let surface = launch(&[site.entry()]).await;
    let authority = Authority::new(&[site.entry()]);
    goto(&surface, &authority, &site.url("/")).await;
    let before = observe_until(&surface, "the inner frame", |s| has(s, "button", "Inner")).await;

    let plain = surface
        .screenshot(ScreenshotRequest::default())
        .await
        .unwrap();
    assert_eq!(
        (plain.mime_type.as_str(), plain.width, plain.height),
        ("image/png", 1280, 800)
    );
    assert_eq!(plain.redacted_regions, 0);
    let image = Image::decode(&plain.bytes);
    assert_eq!((image.width, image.height), (1280, 800));
    let card = find(&before, "text", "Account 4111 1111")
        .bounds
        .expect("rendered");
    let ssn = find(&before, "text", "SSN 078-05-1120")
        .bounds
        .expect("rendered");
    let card_box = Bounds {
        x: 100.0,
        y: 100.0,
        width: 300.0,
        height: 60.0,
    };
    let ssn_box = Bounds {
        x: 520.0,
        y: 120.0,
        width: 200.0,
        height: 80.0,
    };
    assert!(image.all_in(card_box, red) && image.all_in(ssn_box, blue));
    assert!(
        card_box.contains(card.x, card.y) && ssn_box.contains(ssn.x + 1.0, ssn.y + 1.0),
        "{ssn:?}"
    );

    let request = ScreenshotRequest {
        redact_regions: vec![card_box, ssn_box],
    };
    let redacted = surface.screenshot(request).await.unwrap();
    assert_eq!(redacted.redacted_regions, 2);
    let image = Image::decode(&redacted.bytes);
    assert!(
        image.all_in(card_box, black),
        "the card number is painted over"
    );
    assert!(
        image.all_in(ssn_box, black),
        "the framed SSN is painted over"
    );
    assert!(!black(image.pixel(50, 50)), "only the regions are painted");

    // The overlays are gone again: the page looks and reads as before.
    let again = Image::decode(
        &surface
            .screenshot(ScreenshotRequest::default())
            .await
            .unwrap()
            .bytes,
    );
    assert!(again.all_in(card_box, red) && again.all_in(ssn_box, blue));
    assert_eq!(
        surface.observe().await.unwrap().to_json_bytes(),
        before.to_json_bytes()
    );
}
