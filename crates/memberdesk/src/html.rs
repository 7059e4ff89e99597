//! HTML escaping and the page shell every content page shares. There are no templates: pages
//! are built with `format!`, and every interpolated value goes through [`esc`], trusted
//! constants included, so there is one rule to check rather than a judgement per call. The one
//! exception is each variant's compile-time stylesheet, which is CSS, not text.

use std::fmt::{self, Write as _};

use crate::variant::Skin;

/// Escapes text for use in HTML element content and in double- or single-quoted attribute
/// values: `&`, `<`, `>`, `"` and `'`. Pages use the lazy [`esc`]; this eager form exists for
/// tests that compare against it.
#[cfg(test)]
pub(crate) fn html_escape(text: &str) -> String {
    esc(text).to_string()
}

/// Escapes lazily while formatting, so `format!("<td>{}</td>", esc(value))` allocates once.
pub(crate) fn esc(text: &str) -> Escaped<'_> {
    Escaped(text)
}

/// Text that is escaped as it is displayed.
pub(crate) struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(position) = rest.find(['&', '<', '>', '"', '\'']) {
            formatter.write_str(&rest[..position])?;
            let entity = match rest.as_bytes()[position] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => "&#39;",
            };
            formatter.write_str(entity)?;
            rest = &rest[position + 1..];
        }
        formatter.write_str(rest)
    }
}

/// The HTML 4.01 Transitional doctype the legacy pages declare.
const DOCTYPE: &str = "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01 Transitional//EN\">";

/// Wraps a content page: banner, heading, then `body` inside two levels of layout tables.
pub(crate) fn content_page(skin: &Skin, heading: &str, body: &str) -> String {
    content_page_with_preamble(skin, "", heading, body)
}

/// A content page with `preamble` (markup) in a row of its own above the page heading, so
/// whatever it holds belongs to its own headings, not to the page's. An empty preamble adds
/// no row, so the page is exactly what [`content_page`] renders.
pub(crate) fn content_page_with_preamble(
    skin: &Skin,
    preamble: &str,
    heading: &str,
    body: &str,
) -> String {
    let preamble_row = if preamble.is_empty() {
        String::new()
    } else {
        format!("<tr><td>\n{preamble}</td></tr>\n")
    };
    let mut page = String::with_capacity(preamble.len() + body.len() + 1_500);
    let _ = write!(
        page,
        "{DOCTYPE}\n<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\">\n\
         <title>{product} - {heading}</title>\n<style type=\"text/css\">{style}</style>\n</head>\n\
         <body>\n\
         <table class=\"{layout}\" width=\"100%\" border=\"0\" cellpadding=\"0\" cellspacing=\"0\">\n\
         <tr><td class=\"{banner}\">{institution} - {product}</td></tr>\n\
         <tr><td>\n\
         <table width=\"100%\" border=\"0\" cellpadding=\"6\" cellspacing=\"0\">\n\
         {preamble_row}<tr><td><h1 class=\"{heading_class}\">{heading}</h1></td></tr>\n\
         <tr><td>\n{body}</td></tr>\n\
         </table>\n\
         </td></tr>\n\
         </table>\n\
         </body>\n</html>\n",
        product = esc(skin.product),
        heading = esc(heading),
        style = skin.stylesheet,
        layout = esc(skin.class_layout),
        banner = esc(skin.class_banner),
        institution = esc(skin.institution),
        heading_class = esc(skin.class_heading),
    );
    page
}

/// A form or summary row: the label in one cell, `control` (already markup) in the next.
pub(crate) fn label_row(skin: &Skin, label: &str, control: &str) -> String {
    format!(
        "<tr><td class=\"{}\">{}</td><td>{control}</td></tr>\n",
        esc(skin.class_label_cell),
        esc(label),
    )
}

/// A label/value row whose value is plain text.
pub(crate) fn value_row(skin: &Skin, label: &str, value: &str) -> String {
    format!(
        "<tr><td class=\"{}\">{}</td><td class=\"{}\">{}</td></tr>\n",
        esc(skin.class_label_cell),
        esc(label),
        esc(skin.class_value_cell),
        esc(value),
    )
}

/// A paragraph of informational or error text.
pub(crate) fn paragraph(class: &str, text: &str) -> String {
    format!("<p class=\"{}\">{}</p>\n", esc(class), esc(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expect: &str) {
        assert_eq!(html_escape(input), expect, "escaping {input:?}");
    }

    #[test]
    fn escapes_markup_and_quotes() {
        check("", "");
        check("Ada Lovelace", "Ada Lovelace");
        check(
            "<script>alert('x')</script>",
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;",
        );
        check(
            "\"><img src=x onerror=1>",
            "&quot;&gt;&lt;img src=x onerror=1&gt;",
        );
        check("Tom & Jerry &amp;", "Tom &amp; Jerry &amp;amp;");
        check("naïve ünïcode <", "naïve ünïcode &lt;");
        check("&&&", "&amp;&amp;&amp;");
    }

    #[test]
    fn lazy_escaping_formats_the_same() {
        let hostile = "a<b>\"c\"&'d'";
        assert_eq!(
            format!("[{}]", esc(hostile)),
            format!("[{}]", html_escape(hostile))
        );
    }
}
