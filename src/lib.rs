//! lockaudit: a static analyser that audits how Rust code uses distributed
//! locks. Pipeline: `cli` → `config` + `pack` → `walk` → per file on a
//! worker: `source`, syn, `directives`, `model::extract`, `checks` →
//! `finding`s → `report`.

pub mod app;
pub mod baseline;
pub mod cargo;
pub mod checks;
pub mod cli;
pub mod commands;
pub mod config;
pub mod cross;
pub mod diag;
pub mod directives;
pub mod engine;
pub mod escape;
pub mod exit;
pub mod finding;
pub mod fingerprint;
pub mod fix;
pub mod gitref;
pub mod inventory;
pub mod markers;
pub mod model;
pub mod output;
pub mod pack;
pub mod parse;
pub mod prefilter;
pub mod progress;
pub mod report;
pub mod scope;
pub mod session;
pub mod source;
pub mod suggest;
pub mod vocab;
pub mod walk;
pub mod words;
pub mod write;
pub mod yamlloc;
