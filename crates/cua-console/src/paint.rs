//! Redaction of live frames: the regions of a snapshot that show something the redactor would
//! mask are painted black on the decoded frame, in this process, before a frame is handed to
//! any viewer. A frame that must be painted and cannot be decoded is dropped, never sent.

use cua_evidence::Redactor;
use cua_snapshot::{Bounds, UiSnapshot};

use crate::live::LiveFrame;

/// Extra pixels painted around each region, so anti-aliased edges of text do not survive.
const MARGIN: f64 = 2.0;

/// JPEG quality of a re-encoded (painted) frame.
const QUALITY: u8 = 75;

/// The bounds of every node whose name or value the redactor would change (a secret, a
/// sensitive value, a policy pattern), in page CSS pixels.
pub fn sensitive_regions(snapshot: &UiSnapshot, redactor: &Redactor) -> Vec<Bounds> {
    snapshot
        .nodes
        .iter()
        .filter(|node| {
            !redactor.is_clean(&node.name)
                || node
                    .value
                    .as_deref()
                    .is_some_and(|value| !redactor.is_clean(value))
        })
        .filter_map(|node| node.bounds)
        .filter(|bounds| bounds.width > 0.0 && bounds.height > 0.0)
        .collect()
}

/// The frame's JPEG with `regions` painted black. Without regions the bytes pass unchanged;
/// `None` means the frame had to be painted and could not be, so it must not be sent.
pub fn paint(frame: &LiveFrame, regions: &[Bounds]) -> Option<Vec<u8>> {
    if regions.is_empty() {
        return Some(frame.jpeg.clone());
    }
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(
        frame.jpeg.as_slice(),
        zune_jpeg::zune_core::options::DecoderOptions::default()
            .jpeg_set_out_colorspace(zune_jpeg::zune_core::colorspace::ColorSpace::RGB),
    );
    let mut pixels = decoder.decode().ok()?;
    let (width, height) = decoder.dimensions()?;
    if pixels.len() < width * height * 3 || frame.page_width <= 0.0 || frame.page_height <= 0.0 {
        return None;
    }
    let scale_x = width as f64 / frame.page_width;
    let scale_y = height as f64 / frame.page_height;
    for region in regions {
        let left = clamp((region.x - MARGIN) * scale_x, width);
        let right = clamp(((region.x + region.width + MARGIN) * scale_x).ceil(), width);
        let top = clamp((region.y - MARGIN) * scale_y, height);
        let bottom = clamp(
            ((region.y + region.height + MARGIN) * scale_y).ceil(),
            height,
        );
        for row in top..bottom {
            let start = (row * width + left) * 3;
            let end = (row * width + right) * 3;
            pixels[start..end].fill(0);
        }
    }
    let mut out = Vec::new();
    let encoder = jpeg_encoder::Encoder::new(&mut out, QUALITY);
    encoder
        .encode(
            &pixels,
            u16::try_from(width).ok()?,
            u16::try_from(height).ok()?,
            jpeg_encoder::ColorType::Rgb,
        )
        .ok()?;
    Some(out)
}

/// Decodes a JPEG to RGB pixels with its width and height (for tests and checks).
pub fn decode_rgb(jpeg: &[u8]) -> Option<(Vec<u8>, usize, usize)> {
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(
        jpeg,
        zune_jpeg::zune_core::options::DecoderOptions::default()
            .jpeg_set_out_colorspace(zune_jpeg::zune_core::colorspace::ColorSpace::RGB),
    );
    let pixels = decoder.decode().ok()?;
    let (width, height) = decoder.dimensions()?;
    Some((pixels, width, height))
}

/// A pixel coordinate clamped to `0..=limit`.
fn clamp(value: f64, limit: usize) -> usize {
    if value <= 0.0 {
        0
    } else {
        (value.floor() as usize).min(limit)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn white_frame(width: u16, height: u16) -> LiveFrame {
        let pixels = vec![255_u8; usize::from(width) * usize::from(height) * 3];
        let mut jpeg = Vec::new();
        jpeg_encoder::Encoder::new(&mut jpeg, 90)
            .encode(&pixels, width, height, jpeg_encoder::ColorType::Rgb)
            .unwrap();
        LiveFrame {
            jpeg,
            // The frame is half the page's size: regions scale.
            page_width: f64::from(width) * 2.0,
            page_height: f64::from(height) * 2.0,
        }
    }

    fn luminance(pixels: &[u8], width: usize, x: usize, y: usize) -> u8 {
        pixels[(y * width + x) * 3]
    }

    #[test]
    fn regions_are_painted_black_in_frame_pixels() {
        let frame = white_frame(200, 100);
        let region = Bounds {
            x: 100.0,
            y: 40.0,
            width: 60.0,
            height: 20.0,
        };
        let painted = paint(&frame, &[region]).unwrap();
        let (pixels, width, height) = decode_rgb(&painted).unwrap();
        assert_eq!((width, height), (200, 100));
        // The region is (50..80, 20..30) in frame pixels.
        for (x, y) in [(55, 22), (70, 25), (78, 28)] {
            assert!(
                luminance(&pixels, width, x, y) < 16,
                "({x}, {y}) is painted"
            );
        }
        for (x, y) in [(10, 10), (120, 80), (40, 25)] {
            assert!(luminance(&pixels, width, x, y) > 240, "({x}, {y}) is not");
        }
    }

    #[test]
    fn no_regions_pass_the_bytes_and_garbage_is_dropped() {
        let frame = white_frame(16, 16);
        assert_eq!(paint(&frame, &[]).unwrap(), frame.jpeg);
        let garbage = LiveFrame {
            jpeg: b"not a jpeg".to_vec(),
            page_width: 16.0,
            page_height: 16.0,
        };
        let region = Bounds {
            x: 0.0,
            y: 0.0,
            width: 4.0,
            height: 4.0,
        };
        assert_eq!(paint(&garbage, &[region]), None, "fail closed");
    }
}
