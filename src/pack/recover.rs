//! Reading what can be read from a pack that does not deserialise as a
//! whole. serde stops at the first unknown field or bad value; to report
//! every problem of a pack together, each `apis` entry is deserialised on
//! its own, in place, from the same YAML text, so that its errors keep their
//! own line and column and the entries that are fine can still be validated.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::yamlloc::Seg;

/// Deserialises the value at `path` in `text` as a `T`: `Ok(None)` when the
/// path does not exist, `Err` with the position of the first problem in it.
pub fn at_path<T: for<'de> Deserialize<'de>>(
    text: &str,
    path: &[Seg],
) -> Result<Option<T>, yaml_serde::Error> {
    let de = yaml_serde::Deserializer::from_str(text);
    AtPath::<T> {
        path,
        _t: PhantomData,
    }
    .deserialize(de)
}

/// How many entries the top-level `apis` sequence has (0 if none).
pub fn api_count(text: &str) -> usize {
    let value: Result<yaml_serde::Value, _> = yaml_serde::from_str(text);
    value
        .ok()
        .and_then(|v| v.get("apis").and_then(|a| a.as_sequence()).map(Vec::len))
        .unwrap_or(0)
}

struct AtPath<'p, T> {
    path: &'p [Seg],
    _t: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for AtPath<'_, T> {
    type Value = Option<T>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        if self.path.is_empty() {
            T::deserialize(d).map(Some)
        } else {
            d.deserialize_any(self)
        }
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for AtPath<'_, T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping or a sequence")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if found.is_none() && self.path[0] == Seg::Key(key) {
                found = map.next_value_seed(AtPath::<T> {
                    path: &self.path[1..],
                    _t: PhantomData,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<T>, A::Error> {
        let mut i = 0;
        let mut found = None;
        loop {
            if found.is_none() && self.path[0] == Seg::Index(i) {
                match seq.next_element_seed(AtPath::<T> {
                    path: &self.path[1..],
                    _t: PhantomData,
                })? {
                    Some(v) => found = v,
                    None => return Ok(None),
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(found);
            }
            i += 1;
        }
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_one_entry_in_place() {
        let text = "a: 1\nlist:\n  - x: 1\n  - x: oops\n";
        #[derive(Deserialize, Debug)]
        struct X {
            #[allow(dead_code)]
            x: u32,
        }
        let ok: Option<X> = at_path(text, &["list".into(), 0.into()]).unwrap();
        assert!(ok.is_some());
        let err = at_path::<X>(text, &["list".into(), 1.into()]).unwrap_err();
        assert_eq!(err.location().map(|l| l.line()), Some(4));
        let none: Option<X> = at_path(text, &["list".into(), 5.into()]).unwrap();
        assert!(none.is_none());
    }
}
