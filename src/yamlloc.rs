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
