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

/// Deepest nesting of collections (`[[[…]]]`, `{{…}}`, block lists and
/// maps) accepted in a config or pack.
pub const MAX_FLOW_DEPTH: usize = 32;

/// What lockaudit's own YAML never needs, and a stranger's YAML can use
/// to make a small file expensive: an anchor or alias (`&a`, `*a`, whose
/// expansion can be quadratic or worse) or collections nested deeper than
/// [`MAX_FLOW_DEPTH`]. Found in the YAML parser's own events (libyaml's,
/// which `yaml_serde` is built on), before anything is built from them:
/// the parse stops at the first such event, so it costs one pass over the
/// text and memory for one event at a time. The first such place and what
/// is wrong there; a syntax error is left to the deserializer to report.
pub fn find_expensive(text: &str) -> Option<(Loc, String)> {
    let (line, column, message) = events::first_expensive(text.as_bytes())?;
    Some((loc_of(text, line, column), message))
}

/// A 0-based line and character column as a [`Loc`].
fn loc_of(text: &str, line: usize, column: usize) -> Loc {
    let mut start = 0usize;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(n) => start += n + 1,
            None => break,
        }
    }
    let offset = text[start..]
        .char_indices()
        .nth(column)
        .map_or(text.len(), |(i, _)| start + i);
    Loc {
        line: line + 1,
        column: column + 1,
        offset,
    }
}

mod events {
    use super::MAX_FLOW_DEPTH;
    use libyaml_rs as sys;
    use std::mem::MaybeUninit;

    /// Drives libyaml's event parser over `input`: the first anchor, alias
    /// or collection deeper than [`MAX_FLOW_DEPTH`], as a 0-based line and
    /// column and a message. `None` when there is none, or when the text is
    /// not YAML (the deserializer reports that).
    pub fn first_expensive(input: &[u8]) -> Option<(usize, usize, String)> {
        let mut parser = Box::new(MaybeUninit::<sys::yaml_parser_t>::uninit());
        let parser = parser.as_mut_ptr();
        // SAFETY: the parser is initialised before use and deleted once, on
        // every path; `input` outlives it; every event parsed is deleted
        // after its fields are read.
        unsafe {
            if sys::yaml_parser_initialize(parser).fail {
                return None;
            }
            sys::yaml_parser_set_encoding(parser, sys::YAML_UTF8_ENCODING);
            sys::yaml_parser_set_input_string(parser, input.as_ptr(), input.len() as u64);
            let mut depth = 0usize;
            let mut found = None;
            loop {
                let mut event = MaybeUninit::<sys::yaml_event_t>::uninit();
                let e = event.as_mut_ptr();
                if sys::yaml_parser_parse(parser, e).fail {
                    break;
                }
                let ev = &*e;
                let mark = (ev.start_mark.line as usize, ev.start_mark.column as usize);
                let anchored = match ev.type_ {
                    sys::YAML_ALIAS_EVENT => true,
                    sys::YAML_SCALAR_EVENT => !ev.data.scalar.anchor.is_null(),
                    sys::YAML_SEQUENCE_START_EVENT => {
                        depth += 1;
                        !ev.data.sequence_start.anchor.is_null()
                    }
                    sys::YAML_MAPPING_START_EVENT => {
                        depth += 1;
                        !ev.data.mapping_start.anchor.is_null()
                    }
                    sys::YAML_SEQUENCE_END_EVENT | sys::YAML_MAPPING_END_EVENT => {
                        depth = depth.saturating_sub(1);
                        false
                    }
                    _ => false,
                };
                let end = ev.type_ == sys::YAML_STREAM_END_EVENT;
                sys::yaml_event_delete(e);
                if anchored {
                    found = Some((
                        mark.0,
                        mark.1,
                        "YAML anchors and aliases (`&name`, `*name`) are not accepted: write the value out"
                            .to_string(),
                    ));
                    break;
                }
                // The document's own collection is level 0.
                if depth > MAX_FLOW_DEPTH + 1 {
                    found = Some((
                        mark.0,
                        mark.1,
                        format!("YAML nested deeper than {MAX_FLOW_DEPTH} levels"),
                    ));
                    break;
                }
                if end {
                    break;
                }
            }
            sys::yaml_parser_delete(parser);
            found
        }
    }
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
        // What a text scan missed: after a tag, after a quoted flow key,
        // after a block scalar under a `- ` item.
        assert_eq!(at("a: !!seq &x [1]\n"), Some((1, 4)));
        assert_eq!(at("a: [1]\nb: {\"k\": *x}\n"), Some((2, 10)));
        assert_eq!(at("a:\n  - |\n     t\nb: &x 1\n"), Some((4, 4)));
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
