//! The command line (clap derive). `check` is the default command:
//! `lockaudit src/` is `lockaudit check src/`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::report::Format;

#[derive(Debug, Parser)]
#[command(
    name = "lockaudit",
    version,
    about = "Audits how Rust code uses distributed locks",
    long_about = "Audits how Rust code uses distributed locks: every acquisition must say why it exists \
(`// lock-purpose: efficiency|correctness`), and each purpose is held to the mechanism it needs.",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub check: CheckArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Audit PATHS (the default command)
    Check(CheckArgs),
    /// One row per lock: where, backend, key, purpose, expiry, token, release
    Inventory(InventoryArgs),
    /// List the checks with id, severity (as the config sets it) and summary
    Rules(RulesArgs),
    /// Explain a check: why it matters, what an operator sees, bad and good code
    Explain(ExplainArgs),
    /// Write a starter lockaudit.yaml in the current directory
    Init(InitArgs),
    /// Insert `// lock-purpose:` comments above unannotated acquisitions (a diff unless --write)
    Annotate(AnnotateArgs),
    /// A language server on stdio: diagnostics as you edit, quick fixes as code actions
    Lsp(LspArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Note,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Args, Default, Clone)]
pub struct CommonArgs {
    /// Config file (default: lockaudit.yaml or .lockaudit.yaml, from the first path up to the repository root)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Do not audit files matching GLOB (relative to the current directory); repeatable
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Apply the excludes to files named on the command line too (for pre-commit)
    #[arg(long)]
    pub force_exclude: bool,
    /// Worker threads (default: all cores)
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Audit `vendor/`, `third_party/` and generated (`@generated`) files too
    #[arg(long)]
    pub include_vendored: bool,
    /// Parse every file, even those that cannot mention a lock API (for testing the pre-filter)
    #[arg(long, hide = true)]
    pub no_prefilter: bool,
}

#[derive(Debug, Args, Clone)]
pub struct CheckArgs {
    /// Files or directories to audit
    #[arg(value_name = "PATHS", default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Write the report to FILE (atomically) instead of standard output
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Exit 1 when a finding is at or above this severity
    #[arg(long, value_enum, default_value_t = FailOn::Warning)]
    pub fail_on: FailOn,
    /// Report only findings whose fingerprint is not in FILE
    #[arg(long, value_name = "FILE", conflicts_with = "write_baseline")]
    pub baseline: Option<PathBuf>,
    /// Record today's findings in FILE and exit 0
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Drop the entries of baseline FILE that no longer occur (never adds any) and exit
    #[arg(long, value_name = "FILE", conflicts_with_all = ["baseline", "write_baseline"])]
    pub update_baseline: Option<PathBuf>,
    /// Report only findings that are not present at git REF
    #[arg(long, value_name = "REF")]
    pub new_since: Option<String>,
    /// Print findings only, no summary line
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Colour in human output
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    /// Apply the exact fixes to the files, then report what remains
    #[arg(long, conflicts_with = "write_baseline")]
    pub fix: bool,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InventoryFormat {
    Table,
    Json,
}

#[derive(Debug, Args, Clone)]
pub struct InventoryArgs {
    /// Files or directories to list the locks of
    #[arg(value_name = "PATHS", default_value = ".")]
    pub paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = InventoryFormat::Table)]
    pub format: InventoryFormat,
    /// Write the inventory to FILE (atomically)
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Text,
    Json,
}

#[derive(Debug, Args, Clone)]
pub struct RulesArgs {
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub format: ListFormat,
    /// Show the severities this config sets (default: the lockaudit.yaml
    /// that governs the current directory)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct ExplainArgs {
    /// A check id, e.g. unowned-release
    pub check: String,
}

#[derive(Debug, Args, Clone)]
pub struct InitArgs {
    /// Overwrite an existing lockaudit.yaml
    #[arg(long)]
    pub force: bool,
}

/// A purpose named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PurposeArg {
    Efficiency,
    Correctness,
}

impl From<PurposeArg> for crate::finding::Purpose {
    fn from(p: PurposeArg) -> Self {
        match p {
            PurposeArg::Efficiency => crate::finding::Purpose::Efficiency,
            PurposeArg::Correctness => crate::finding::Purpose::Correctness,
        }
    }
}

#[derive(Debug, Args, Clone)]
pub struct AnnotateArgs {
    /// Files or directories whose acquisitions to annotate
    #[arg(value_name = "PATHS", default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// The purpose to write down (review each `TODO: why` afterwards)
    #[arg(long, value_enum)]
    pub purpose: PurposeArg,
    /// Rewrite the files instead of printing a unified diff
    #[arg(long)]
    pub write: bool,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args, Clone)]
pub struct LspArgs {
    /// Config file for every document (default: the nearest lockaudit.yaml above each file)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// The subcommands, for "did you mean" (clap's own list, plus `help`).
pub fn subcommand_names() -> Vec<String> {
    use clap::CommandFactory;
    let mut names: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    names.push("help".into());
    names
}

/// The arguments as clap should see them. `cargo lockaudit check` runs
/// `cargo-lockaudit lockaudit check`, so that first `lockaudit` is dropped
/// when `cargo_subcommand` is set. A first argument that is neither a
/// subcommand nor an existing path, but close to a subcommand's name
/// (`chek`), is an error with a suggestion rather than a path to audit.
pub fn normalize(mut args: Vec<OsString>, cargo_subcommand: bool) -> Result<Vec<OsString>, String> {
    if cargo_subcommand && args.get(1).is_some_and(|a| a == "lockaudit") {
        args.remove(1);
    }
    if let Some(first) = args.get(1).and_then(|a| a.to_str()) {
        let names = subcommand_names();
        let is_name = names.iter().any(|n| n == first);
        if !first.starts_with('-') && !is_name && !Path::new(first).exists() {
            if let Some(s) = crate::suggest::closest(first, names.iter().map(String::as_str)) {
                return Err(format!(
                    "unrecognized subcommand `{first}`: did you mean `{s}`? (no file or \
                     directory `{first}` exists either; `lockaudit --help` lists the subcommands)"
                ));
            }
        }
    }
    Ok(args)
}
