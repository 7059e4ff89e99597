//! Where each node of a YAML document sits in its text: a document path (`steps[2].action`) to
//! line, column and byte span. Rules report paths; this turns them into places a reviewer can
//! jump to.
//!
//! The index is built from the parser's event stream without expanding aliases, so building it
//! costs time linear in the text, whatever the text is.

use std::collections::HashMap;
use std::fmt;

use serde_saphyr::granit_parser::{Event, Marker, Parser, Span};

/// A point and extent in a source text. Line and column are 1-based; offset and length are bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceLocation {
    pub line: u32,
    pub column: u32,
    pub offset: usize,
    pub length: usize,
}

/// A path to a node of a document: `steps[2].action.target.ordinal`. Keys that are not plain
/// identifiers are quoted: `returns["member id"]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocPath(String);

impl DocPath {
    /// The document root.
    pub fn root() -> Self {
        Self(String::new())
    }

    /// The child under a mapping key.
    pub fn key(&self, key: &str) -> Self {
        let plain = key.bytes().enumerate().all(|(i, b)| {
            b == b'_' || b == b'$' || b.is_ascii_alphabetic() || (i > 0 && b.is_ascii_digit())
        }) && !key.is_empty();
        let mut path = self.0.clone();
        if plain {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
        } else {
            path.push_str(&format!("[{key:?}]"));
        }
        Self(path)
    }

    /// The child at a sequence index.
    pub fn index(&self, index: usize) -> Self {
        Self(format!("{}[{index}]", self.0))
    }

    /// The path text; empty for the root.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The parent path, if this is not the root.
    pub fn parent(&self) -> Option<Self> {
        if self.0.is_empty() {
            return None;
        }
        let cut = self.0.rfind(['.', '[']).unwrap_or(0);
        // A quoted key may contain `.` or `[`; walk back to the `[` that opens it.
        let cut = if self.0.ends_with("\"]") {
            self.0[..self.0.len() - 2].rfind("[\"").unwrap_or(cut)
        } else {
            cut
        };
        Some(Self(self.0[..cut].to_owned()))
    }

    /// Whether `self` is `other` or lies under it.
    pub fn starts_with(&self, other: &DocPath) -> bool {
        other.0.is_empty()
            || self.0 == other.0
            || (self.0.starts_with(&other.0)
                && matches!(self.0.as_bytes()[other.0.len()], b'.' | b'['))
    }
}

impl fmt::Display for DocPath {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            formatter.write_str("(document)")
        } else {
            formatter.write_str(&self.0)
        }
    }
}

/// One node of the document.
#[derive(Debug, Clone)]
pub struct SourceNode {
    pub path: DocPath,
    /// The key that names this node in its parent mapping.
    pub key: Option<SourceLocation>,
    /// The node itself: the scalar, or the collection from its start to its end.
    pub value: SourceLocation,
    /// The scalar's text, for scalars.
    pub scalar: Option<String>,
}

/// Every node of a document by path, in document order.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    nodes: Vec<SourceNode>,
    by_path: HashMap<DocPath, usize>,
}

impl SourceMap {
    /// Indexes `text`. A text the parser rejects yields the nodes before the error.
    pub fn build(text: &str) -> Self {
        let mut builder = Builder {
            text,
            map: SourceMap::default(),
            stack: Vec::new(),
        };
        for event in Parser::new_from_str(text) {
            let Ok((event, span)) = event else { break };
            builder.event(event, span);
        }
        builder.map
    }

    /// The node at exactly this path.
    pub fn get(&self, path: &DocPath) -> Option<&SourceNode> {
        self.by_path.get(path).map(|&index| &self.nodes[index])
    }

    /// The node at this path, or its nearest ancestor present in the text (a value filled in by
    /// a default has no text of its own).
    pub fn nearest(&self, path: &DocPath) -> Option<&SourceNode> {
        let mut current = Some(path.clone());
        while let Some(path) = current {
            if let Some(node) = self.get(&path) {
                return Some(node);
            }
            current = path.parent();
        }
        None
    }

    /// Where a diagnostic about `path` should point: a scalar itself, a collection by its key
    /// (or its start when it has none).
    pub fn locate(&self, path: &DocPath) -> Option<SourceLocation> {
        let node = self.nearest(path)?;
        Some(match (&node.scalar, node.key) {
            (Some(_), _) | (None, None) => node.value,
            (None, Some(key)) => key,
        })
    }

    /// Nodes in document order.
    pub fn nodes(&self) -> &[SourceNode] {
        &self.nodes
    }

    /// The node whose key or value starts at this byte offset.
    pub fn at_offset(&self, offset: usize) -> Option<&SourceNode> {
        self.nodes
            .iter()
            .find(|node| node.key.is_some_and(|key| key.offset == offset))
            .or_else(|| self.nodes.iter().find(|node| node.value.offset == offset))
    }

    /// The first node under `ancestor` (inclusive) that satisfies `predicate`.
    pub fn find_under(
        &self,
        ancestor: &DocPath,
        mut predicate: impl FnMut(&SourceNode) -> bool,
    ) -> Option<&SourceNode> {
        self.nodes
            .iter()
            .find(|node| node.path.starts_with(ancestor) && predicate(node))
    }
}

enum Frame {
    Mapping {
        path: DocPath,
        index: usize,
        pending_key: Option<(String, SourceLocation)>,
    },
    Sequence {
        path: DocPath,
        index: usize,
        next: usize,
    },
    /// A complex (non-scalar) mapping key: swallowed whole, it names nothing a rule reports.
    Ignored { depth: usize },
}

struct Builder<'a> {
    text: &'a str,
    map: SourceMap,
    stack: Vec<Frame>,
}

impl Builder<'_> {
    fn event(&mut self, event: Event<'_>, span: Span) {
        if let Some(Frame::Ignored { depth }) = self.stack.last_mut() {
            match event {
                Event::MappingStart(..) | Event::SequenceStart(..) => *depth += 1,
                Event::MappingEnd | Event::SequenceEnd => {
                    *depth -= 1;
                    if *depth == 0 {
                        self.stack.pop();
                        // The ignored key still needs a value; give it a name nothing matches.
                        let location = self.location(span);
                        if let Some(Frame::Mapping { pending_key, .. }) = self.stack.last_mut() {
                            *pending_key = Some(("?".to_owned(), location));
                        }
                    }
                }
                _ => {}
            }
            return;
        }
        match event {
            Event::Scalar(text, ..) => {
                if self.awaiting_key() {
                    let location = self.location(span);
                    if let Some(Frame::Mapping { pending_key, .. }) = self.stack.last_mut() {
                        *pending_key = Some((text.into_owned(), location));
                    }
                } else {
                    let location = self.location(span);
                    self.push_node(location, Some(text.into_owned()));
                }
            }
            Event::Alias(_) => {
                if self.awaiting_key() {
                    let location = self.location(span);
                    if let Some(Frame::Mapping { pending_key, .. }) = self.stack.last_mut() {
                        *pending_key = Some(("*".to_owned(), location));
                    }
                } else {
                    let location = self.location(span);
                    self.push_node(location, None);
                }
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if self.awaiting_key() {
                    self.stack.push(Frame::Ignored { depth: 1 });
                    return;
                }
                let location = self.location(span);
                let (path, index) = self.push_node(location, None);
                self.stack.push(match event {
                    Event::MappingStart(..) => Frame::Mapping {
                        path,
                        index,
                        pending_key: None,
                    },
                    _ => Frame::Sequence {
                        path,
                        index,
                        next: 0,
                    },
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let end = self.marker_offset(span.end);
                if let Some(Frame::Mapping { index, .. } | Frame::Sequence { index, .. }) =
                    self.stack.pop()
                {
                    let node = &mut self.map.nodes[index];
                    node.value.length = end.saturating_sub(node.value.offset).max(1);
                }
            }
            _ => {}
        }
    }

    fn awaiting_key(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame::Mapping {
                pending_key: None,
                ..
            })
        )
    }

    /// Records a value node under the current parent and returns its path and index.
    fn push_node(&mut self, value: SourceLocation, scalar: Option<String>) -> (DocPath, usize) {
        let (path, key) = match self.stack.last_mut() {
            Some(Frame::Mapping {
                path, pending_key, ..
            }) => match pending_key.take() {
                Some((key, key_location)) => (path.key(&key), Some(key_location)),
                None => (path.key("?"), None),
            },
            Some(Frame::Sequence { path, next, .. }) => {
                let path = path.index(*next);
                *next += 1;
                (path, None)
            }
            Some(Frame::Ignored { .. }) | None => (DocPath::root(), None),
        };
        let index = self.map.nodes.len();
        self.map.by_path.entry(path.clone()).or_insert(index);
        self.map.nodes.push(SourceNode {
            path: path.clone(),
            key,
            value,
            scalar,
        });
        (path, index)
    }

    fn location(&self, span: Span) -> SourceLocation {
        let start = self.marker_offset(span.start);
        let end = self.marker_offset(span.end);
        SourceLocation {
            line: u32::try_from(span.start.line()).unwrap_or(u32::MAX),
            column: u32::try_from(span.start.col() + 1).unwrap_or(u32::MAX),
            offset: start,
            length: end.saturating_sub(start),
        }
    }

    fn marker_offset(&self, marker: Marker) -> usize {
        marker.byte_offset().unwrap_or_else(|| {
            self.text
                .char_indices()
                .nth(marker.index())
                .map_or(self.text.len(), |(byte, _)| byte)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let path = DocPath::root()
            .key("steps")
            .index(2)
            .key("action")
            .key("$input");
        assert_eq!(path.as_str(), "steps[2].action.$input");
        assert_eq!(
            path.parent().map(|p| p.as_str().to_owned()),
            Some("steps[2].action".into())
        );
        let quoted = DocPath::root().key("returns").key("a.b[c]");
        assert_eq!(quoted.as_str(), "returns[\"a.b[c]\"]");
        assert_eq!(
            quoted.parent().map(|p| p.as_str().to_owned()),
            Some("returns".into())
        );
        assert!(path.starts_with(&DocPath::root().key("steps")));
        assert!(
            !DocPath::root()
                .key("stepsx")
                .starts_with(&DocPath::root().key("steps"))
        );
    }

    #[test]
    fn locates_nodes() {
        let text = "id: x\nsteps:\n  - id: a\n    action: {type: click, target: {role: button}}\n  - id: b\n";
        let map = SourceMap::build(text);
        let role = map.get(
            &DocPath::root()
                .key("steps")
                .index(0)
                .key("action")
                .key("target")
                .key("role"),
        );
        let role = role.expect("role indexed");
        assert_eq!((role.value.line, role.value.column), (4, 42));
        assert_eq!(
            &text[role.value.offset..role.value.offset + role.value.length],
            "button"
        );
        let second = map
            .locate(&DocPath::root().key("steps").index(1).key("risk"))
            .expect("ancestor");
        assert_eq!((second.line, second.column), (5, 5));
    }
}
