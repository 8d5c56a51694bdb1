//! Locations inside YAML files (rule packs, config) for error messages.
//!
//! `yaml_serde` reports a position for syntax and type errors, but a value
//! that deserialised fine can still be invalid (a regex that does not
//! compile, a duplicate id). To point at it, we deserialise the text once
//! more with a probe that walks to the value and fails there: the YAML
//! deserializer stamps its own position on the error, so the location is
//! exactly where the value starts.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step into a YAML document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

impl From<&str> for Seg {
    fn from(s: &str) -> Seg {
        Seg::Key(s.to_string())
    }
}

impl From<usize> for Seg {
    fn from(i: usize) -> Seg {
        Seg::Index(i)
    }
}

/// A 1-based line and column and the byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Loc {
    pub line: usize,
    pub column: usize,
    pub offset: usize,
}

const MARKER: &str = "\u{0}lockaudit-probe";

/// Where the value at `path` starts; `None` if the path does not exist.
pub fn locate(text: &str, path: &[Seg]) -> Option<Loc> {
    let de = yaml_serde::Deserializer::from_str(text);
    match (Probe { path }).deserialize(de) {
        Ok(()) => None,
        Err(e) if e.to_string().contains(MARKER) => e.location().map(|l| Loc {
            line: l.line(),
            column: l.column(),
            offset: l.index(),
        }),
        Err(_) => None,
    }
}

/// The message of a `yaml_serde` error without its " at line N column M" tail.
pub fn message(err: &yaml_serde::Error) -> String {
    let text = err.to_string();
    match text.find(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

pub fn error_loc(err: &yaml_serde::Error) -> Option<Loc> {
    err.location().map(|l| Loc {
        line: l.line(),
        column: l.column(),
        offset: l.index(),
    })
}

struct Probe<'p> {
    path: &'p [Seg],
}

impl<'de> DeserializeSeed<'de> for Probe<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Probe<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if self.path.is_empty() {
            return Err(de::Error::custom(MARKER));
        }
        while let Some(key) = map.next_key::<String>()? {
            if self.path[0] == Seg::Key(key) {
                return map.next_value_seed(Probe {
                    path: &self.path[1..],
                });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.path.is_empty() {
            return Err(de::Error::custom(MARKER));
        }
        let mut i = 0;
        loop {
            if self.path[0] == Seg::Index(i) {
                return seq
                    .next_element_seed(Probe {
                        path: &self.path[1..],
                    })
                    .map(|_| ());
            }
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.leaf()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.leaf()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.leaf()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.leaf()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.leaf()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.leaf()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.leaf()
    }
}

impl Probe<'_> {
    fn leaf<E: de::Error>(&self) -> Result<(), E> {
        if self.path.is_empty() {
            Err(E::custom(MARKER))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_values() {
        let text = "backend: x\napis:\n  - id: a\n    match:\n      text: ['ok', '(bad']\n";
        let loc = locate(
            text,
            &[
                "apis".into(),
                0.into(),
                "match".into(),
                "text".into(),
                1.into(),
            ],
        )
        .unwrap();
        assert_eq!((loc.line, loc.column), (5, 20));
        assert_eq!(locate(text, &["nope".into()]), None);
        let loc = locate(text, &["apis".into(), 0.into(), "id".into()]).unwrap();
        assert_eq!((loc.line, loc.column), (3, 9));
    }
}

/// Deepest flow nesting (`[[[…]]]`, `{{…}}`) accepted in a config or pack.
pub const MAX_FLOW_DEPTH: usize = 32;

/// What lockaudit's own YAML never needs, and a stranger's YAML can use
/// to make a small file expensive: an anchor or alias (`&a`, `*a`, whose
/// expansion can be quadratic or worse) or flow collections nested deeper
/// than [`MAX_FLOW_DEPTH`]. Found by a scan of the text, before any YAML
/// parser sees it: the first such place and what is wrong there.
pub fn find_expensive(text: &str) -> Option<(Loc, String)> {
    let bytes = text.as_bytes();
    let mut line = 1usize;
    let mut line_start = 0usize;
    let mut depth = 0usize;
    // A node may start here: after indentation, `- `, `? `, `: `, `[`, `{`, `,`.
    let mut node_start = true;
    // A block scalar (`|`, `>`) holds lines indented deeper than this.
    let mut block_indent: Option<usize> = None;
    let loc = |i: usize, line: usize, line_start: usize| Loc {
        line,
        column: text[line_start..i].chars().count() + 1,
        offset: i,
    };
    let mut i = 0usize;
    while i < bytes.len() {
        let b = bytes[i];
        if i == line_start {
            let indent = bytes[i..]
                .iter()
                .take_while(|c| **c == b' ' || **c == b'\t')
                .count();
            let blank = matches!(bytes.get(i + indent), None | Some(b'\n') | Some(b'\r'));
            if let Some(bi) = block_indent {
                if blank || indent > bi {
                    // Inside a block scalar: content, skip the line.
                    let end = bytes[i..]
                        .iter()
                        .position(|c| *c == b'\n')
                        .map_or(bytes.len(), |p| i + p);
                    i = end;
                    continue;
                }
                block_indent = None;
            }
            if depth == 0 {
                node_start = true;
            }
        }
        match b {
            b'\n' => {
                line += 1;
                line_start = i + 1;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' if i == line_start || matches!(bytes[i - 1], b' ' | b'\t') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            _ => {}
        }
        if node_start {
            match b {
                b'&' | b'*' => {
                    return Some((
                        loc(i, line, line_start),
                        "YAML anchors and aliases (`&name`, `*name`) are not accepted: write the value out"
                            .to_string(),
                    ))
                }
                b'\'' | b'"' => {
                    // A quoted scalar, possibly over several lines.
                    let mut j = i + 1;
                    while j < bytes.len() {
                        match bytes[j] {
                            b'\\' if b == b'"' => j += 1,
                            c if c == b => {
                                if b == b'\'' && bytes.get(j + 1) == Some(&b'\'') {
                                    j += 1;
                                } else {
                                    break;
                                }
                            }
                            b'\n' => {
                                line += 1;
                                line_start = j + 1;
                            }
                            _ => {}
                        }
                        j += 1;
                    }
                    i = j + 1;
                    node_start = false;
                    continue;
                }
                b'|' | b'>' => {
                    let indent = bytes[line_start..]
                        .iter()
                        .take_while(|c| **c == b' ')
                        .count();
                    block_indent = Some(indent);
                    node_start = false;
                    i += 1;
                    continue;
                }
                b'-' | b'?' if matches!(bytes.get(i + 1), None | Some(b' ' | b'\n' | b'\r')) => {
                    i += 1;
                    continue;
                }
                _ => {}
            }
        }
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_FLOW_DEPTH {
                    return Some((
                        loc(i, line, line_start),
                        format!("YAML nested deeper than {MAX_FLOW_DEPTH} levels"),
                    ));
                }
                node_start = true;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                node_start = false;
            }
            b',' if depth > 0 => node_start = true,
            b':' if matches!(bytes.get(i + 1), None | Some(b' ' | b'\n' | b'\r' | b'\t'))
                || (depth > 0 && matches!(bytes.get(i + 1), Some(b',' | b']' | b'}'))) =>
            {
                node_start = true;
            }
            _ => node_start = false,
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod expensive_tests {
    use super::find_expensive;

    #[test]
    fn anchors_aliases_and_deep_flows_are_found() {
        let at = |t: &str| find_expensive(t).map(|(l, _)| (l.line, l.column));
        assert_eq!(at("x: &a [1, 2]\ny: [*a, *a]\n"), Some((1, 4)));
        assert_eq!(at("x:\n  - *a\n"), Some((2, 5)));
        assert_eq!(at("{a: &x 1}"), Some((1, 5)));
        assert_eq!(at(&format!("exclude: {}", "[".repeat(40))), Some((1, 42)));
        for fine in [
            "exclude: [\"vendor/**\", '*.gen.rs']\n",
            "lock-name-pattern: \"(?i)lock|*x&y\"\n",
            "text: [foo.*bar, a&b]\n",
            "help: |\n  *not an alias*\n  &neither\nnext: 1\n",
            "# &comment *x\nrules: []  # *x\n",
            "key: 'it''s *fine*'\n",
            "a: b*c\n",
        ] {
            assert_eq!(at(fine), None, "{fine}");
        }
    }
}
