//! `lockaudit.yaml` exactly as written. Values stay strings here so that
//! `config/mod.rs` can report a bad one at its own line and column.

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawConfig {
    /// Extra rule packs, relative to the config file.
    #[serde(default)]
    pub rules: Vec<String>,
    /// Per check id: `error`, `warning`, `note` or `off`.
    #[serde(default)]
    pub checks: BTreeMap<String, String>,
    /// Globs of files not to audit, relative to the config file.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Regex for keys, names and functions that are about locks.
    #[serde(default)]
    pub lock_name_pattern: Option<String>,
    /// `none`, `efficiency` or `correctness`: what an unannotated acquisition is held to.
    #[serde(default)]
    pub default_purpose: Option<String>,
    /// Files larger than this many bytes are not audited (a note says so).
    #[serde(default)]
    pub max_file_size: Option<u64>,
    /// Facts about this deployment's backends, by backend name
    /// (`redis: { consensus: true, reason: "…" }`): they override the rule
    /// pack's for this repository.
    #[serde(default)]
    pub backends: BTreeMap<String, RawBackend>,
}

/// What a config says of one backend in this deployment.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBackend {
    /// Whether the store decides by consensus (a quorum that survives a
    /// failover without granting a lock twice).
    pub consensus: bool,
    /// Why: shown wherever the fact is used.
    pub reason: String,
}
