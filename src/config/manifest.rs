//! A config in `Cargo.toml`: `[package.metadata.lockaudit]` or
//! `[workspace.metadata.lockaudit]`, with the keys and values of
//! `lockaudit.yaml`. Its problems are reported at their line and column in
//! the manifest, as a YAML config's are.

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::yamlloc::{Loc, Seg};

/// The manifest's name.
pub const MANIFEST: &str = "Cargo.toml";

/// The tables that may hold a config, in the order they are looked for.
const TABLES: [[&str; 3]; 2] = [
    ["package", "metadata", "lockaudit"],
    ["workspace", "metadata", "lockaudit"],
];

/// The path of the table holding this manifest's config, if it has one.
/// A manifest that never says `lockaudit`, or does not parse, has none (a
/// broken manifest is cargo's to report).
pub fn config_table(text: &str) -> Option<Vec<Seg>> {
    if !text.contains("lockaudit") {
        return None;
    }
    let doc = DeTable::parse(text).ok()?;
    TABLES.iter().find_map(|t| {
        let path: Vec<Seg> = t.iter().map(|&k| Seg::from(k)).collect();
        matches!(value_at(doc.get_ref(), &path), Some(v) if matches!(v.get_ref(), DeValue::Table(_)))
            .then_some(path)
    })
}

fn value_at<'a, 'i>(table: &'a DeTable<'i>, path: &[Seg]) -> Option<&'a Spanned<DeValue<'i>>> {
    let (first, rest) = path.split_first()?;
    let Seg::Key(k) = first else { return None };
    let mut cur = table.iter().find(|(key, _)| key.get_ref() == k)?.1;
    for seg in rest {
        cur = match (cur.get_ref(), seg) {
            (DeValue::Table(t), Seg::Key(k)) => t.iter().find(|(key, _)| key.get_ref() == k)?.1,
            (DeValue::Array(a), Seg::Index(i)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Where the value at `path` starts.
pub fn locate(text: &str, path: &[Seg]) -> Option<Loc> {
    let doc = DeTable::parse(text).ok()?;
    let v = value_at(doc.get_ref(), path)?;
    Some(loc_of(text, v.span().start))
}

/// The line and column of byte `offset`.
pub fn loc_of(text: &str, offset: usize) -> Loc {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    Loc {
        line: before.matches('\n').count() + 1,
        column: before.rsplit('\n').next().unwrap_or("").chars().count() + 1,
        offset,
    }
}

/// The manifest's config table, deserialised as written: the caller
/// validates the values, as for `lockaudit.yaml`. A wrong key or type is
/// the error, with its byte range in the manifest.
pub fn raw_config(
    text: &str,
    table: &[Seg],
) -> Result<super::raw::RawConfig, (String, Option<std::ops::Range<usize>>)> {
    use serde::Deserialize;
    // Only the chosen table is deserialised as a config (the other one,
    // and the rest of the manifest, are skipped unread), and the spans of
    // its errors stay the manifest's.
    #[derive(Deserialize)]
    struct Package {
        package: Option<Holder>,
    }
    #[derive(Deserialize)]
    struct Workspace {
        workspace: Option<Holder>,
    }
    #[derive(Deserialize)]
    struct Holder {
        metadata: Option<Metadata>,
    }
    #[derive(Deserialize)]
    struct Metadata {
        lockaudit: Option<super::raw::RawConfig>,
    }
    let err = |e: toml::de::Error| (e.message().to_string(), e.span());
    let holder = match table.first() {
        Some(Seg::Key(k)) if k == "workspace" => {
            toml::from_str::<Workspace>(text).map_err(err)?.workspace
        }
        _ => toml::from_str::<Package>(text).map_err(err)?.package,
    };
    Ok(holder
        .and_then(|h| h.metadata)
        .and_then(|m| m.lockaudit)
        .unwrap_or_default())
}
