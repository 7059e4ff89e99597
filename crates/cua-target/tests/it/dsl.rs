//! A tiny text format for snapshots, so a test reads like the page it describes.
//!
//! ```text
//! @url http://127.0.0.1/member/12345
//! @status 200
//! document "MemberDesk" frame=content
//!   heading "Summary" region=detail_view
//!   table region=detail_view
//!     row > cell "Savings Balance" | cell "$4,210.55"
//!     row > cell "Amount" | cell > textbox css="#amt" value="25.00"
//! ```
//!
//! One node chain per line; indentation (two spaces) makes a line's first node a child of the
//! last line-head one level up. Within a line, `a > b | c` makes `b` and `c` children of `a`,
//! and `>` nests to the right (`a > b > c | d` puts `c` and `d` under `b`). A node is a role,
//! an optional quoted name, and attributes: `value=`, `css=`, `frame=`, `region=`,
//! `states=a,b`, and `label=` (a label the page associates with the node; repeatable). `frame` and `region` are inherited by descendants. Ids are structural paths
//! counted per role, like a driver's: `content:/document[0]/table[0]/row[1]/cell[0]`.

use cua_snapshot::{NodeId, UiNode, UiSnapshot};

pub(crate) fn snapshot(text: &str) -> UiSnapshot {
    let mut builder = Builder {
        nodes: Vec::new(),
        url: "http://127.0.0.1/".to_owned(),
        title: String::new(),
        status: Some(200),
    };
    let mut heads: Vec<usize> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let trimmed = line.trim_start();
        if let Some(directive) = trimmed.strip_prefix('@') {
            let (key, value) = directive.split_once(' ').unwrap_or((directive, ""));
            match key {
                "url" => builder.url = value.trim().to_owned(),
                "title" => builder.title = value.trim().to_owned(),
                "status" => builder.status = value.trim().parse().ok(),
                other => panic!("unknown directive @{other}"),
            }
            continue;
        }
        let indent = line.len() - trimmed.len();
        assert_eq!(indent % 2, 0, "indent by two spaces: {line:?}");
        let level = indent / 2;
        heads.truncate(level);
        assert_eq!(
            heads.len(),
            level,
            "line indented past its parent: {line:?}"
        );
        let parent = heads.last().copied();
        let tokens = tokenize(trimmed);
        let mut position = 0;
        let head = builder.chain(&tokens, &mut position, parent);
        assert_eq!(position, tokens.len(), "unparsed tokens in {line:?}");
        heads.push(head);
    }
    UiSnapshot {
        url: builder.url,
        title: builder.title,
        http_status: builder.status,
        nodes: builder.nodes,
    }
}

struct Builder {
    nodes: Vec<UiNode>,
    url: String,
    title: String,
    status: Option<u16>,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Quoted(String),
    Child,
    Sibling,
}

impl Builder {
    /// chain := node ('>' chain ('|' chain)*)?
    fn chain(&mut self, tokens: &[Token], position: &mut usize, parent: Option<usize>) -> usize {
        let node = self.node(tokens, position, parent);
        if tokens.get(*position) == Some(&Token::Child) {
            *position += 1;
            self.chain(tokens, position, Some(node));
            while tokens.get(*position) == Some(&Token::Sibling) {
                *position += 1;
                self.chain(tokens, position, Some(node));
            }
        }
        node
    }

    fn node(&mut self, tokens: &[Token], position: &mut usize, parent: Option<usize>) -> usize {
        let Some(Token::Word(role)) = tokens.get(*position) else {
            panic!("expected a role at token {position}: {tokens:?}");
        };
        *position += 1;
        let mut name = String::new();
        if let Some(Token::Quoted(text)) = tokens.get(*position) {
            name = text.clone();
            *position += 1;
        }
        let mut scope = parent
            .map(|parent| self.nodes[parent].scope.clone())
            .unwrap_or_default();
        let (mut value, mut css, mut states, mut labels) = (None, None, Vec::new(), Vec::new());
        while let Some(Token::Word(word)) = tokens.get(*position) {
            let Some((key, inline)) = word.split_once('=') else {
                break;
            };
            *position += 1;
            let text = if inline.is_empty() {
                match tokens.get(*position) {
                    Some(Token::Quoted(text)) => {
                        *position += 1;
                        text.clone()
                    }
                    _ => String::new(),
                }
            } else {
                inline.to_owned()
            };
            match key {
                "value" => value = Some(text),
                "css" => css = Some(text),
                "frame" => scope.frame = Some(text),
                "region" => scope.region = Some(text),
                "states" => states = text.split(',').map(str::to_owned).collect(),
                "label" => labels.push(text),
                other => panic!("unknown attribute {other}"),
            }
        }
        let id = self.id(parent, role, scope.frame.as_deref());
        let index = self.nodes.len();
        let depth = parent.map_or(0, |parent| self.nodes[parent].depth + 1);
        self.nodes.push(UiNode {
            id: NodeId::new(id),
            role: role.clone(),
            name,
            value,
            states,
            bounds: None,
            scope,
            depth,
            parent: parent.map(|parent| parent as u32),
            children: Vec::new(),
            css_hint: css,
            labels,
        });
        if let Some(parent) = parent {
            self.nodes[parent].children.push(index as u32);
        }
        index
    }

    fn id(&self, parent: Option<usize>, role: &str, frame: Option<&str>) -> String {
        match parent {
            None => {
                let same = self
                    .nodes
                    .iter()
                    .filter(|node| {
                        node.parent.is_none()
                            && node.role == role
                            && node.scope.frame.as_deref() == frame
                    })
                    .count();
                format!("{}:/{role}[{same}]", frame.unwrap_or("main"))
            }
            Some(parent) => {
                let same = self.nodes[parent]
                    .children
                    .iter()
                    .filter(|&&child| self.nodes[child as usize].role == role)
                    .count();
                format!("{}/{role}[{same}]", self.nodes[parent].id)
            }
        }
    }
}

fn tokenize(line: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut characters = line.chars().peekable();
    while let Some(&character) = characters.peek() {
        match character {
            ' ' => {
                characters.next();
            }
            '>' => {
                characters.next();
                tokens.push(Token::Child);
            }
            '|' => {
                characters.next();
                tokens.push(Token::Sibling);
            }
            '"' => {
                characters.next();
                let mut text = String::new();
                loop {
                    match characters.next() {
                        Some('\\') => text.extend(characters.next()),
                        Some('"') => break,
                        Some(other) => text.push(other),
                        None => panic!("unterminated string in {line:?}"),
                    }
                }
                tokens.push(Token::Quoted(text));
            }
            _ => {
                let mut word = String::new();
                while let Some(&next) = characters.peek() {
                    if next == ' ' {
                        break;
                    }
                    if next == '"' {
                        // `key="quoted value"`: the word ends at `=`, the string follows.
                        break;
                    }
                    word.push(next);
                    characters.next();
                }
                tokens.push(Token::Word(word));
            }
        }
    }
    tokens
}

/// The snapshot back as one line per node, for checking the builder itself.
pub(crate) fn outline(snapshot: &UiSnapshot) -> String {
    snapshot
        .nodes
        .iter()
        .map(|node| {
            format!(
                "{}{} {:?}",
                "  ".repeat(node.depth as usize),
                node.id,
                node.name
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_builder_parses_chains_and_indentation() {
    let page = snapshot(
        r##"
document "Page" frame=content
  table region=detail_view
    row > cell "Savings Balance" | cell "$4,210.55"
    row > cell "Amount" | cell > textbox css="#amt" value="25.00"
  button "Go"
"##,
    );
    assert_eq!(
        outline(&page),
        r#"content:/document[0] "Page"
  content:/document[0]/table[0] ""
    content:/document[0]/table[0]/row[0] ""
      content:/document[0]/table[0]/row[0]/cell[0] "Savings Balance"
      content:/document[0]/table[0]/row[0]/cell[1] "$4,210.55"
    content:/document[0]/table[0]/row[1] ""
      content:/document[0]/table[0]/row[1]/cell[0] "Amount"
      content:/document[0]/table[0]/row[1]/cell[1] ""
        content:/document[0]/table[0]/row[1]/cell[1]/textbox[0] ""
  content:/document[0]/button[0] "Go""#
    );
    let textbox = &page.nodes[8];
    assert_eq!(textbox.css_hint.as_deref(), Some("#amt"));
    assert_eq!(textbox.value.as_deref(), Some("25.00"));
    assert_eq!(textbox.scope.region.as_deref(), Some("detail_view"));
    assert_eq!(textbox.scope.frame.as_deref(), Some("content"));
    assert_eq!(page.descendants(1), 2..9);
    assert_eq!(page.nodes[9].scope.region, None);
}
