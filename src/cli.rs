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
    /// Test a rule pack against the fixtures beside it (`//~ check-id` markers)
    TestPack(TestPackArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions(CompletionsArgs),
    /// Print the man page (roff), e.g. `lockaudit manpage > lockaudit.1`
    Manpage,
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
    /// One config file for every audited file (default: each file's nearest lockaudit.yaml or
    /// .lockaudit.yaml, from its own directory up to the repository root)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Do not audit files matching GLOB (relative to the current directory); repeatable; "#[cfg(test)]" leaves out code under #[cfg(test)]
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Apply the excludes to files named on the command line too (for pre-commit)
    #[arg(long)]
    pub force_exclude: bool,
    /// Worker threads (default: all cores)
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Audit `vendor/`, `third_party/` and generated (`@generated`, bindgen's) files too
    #[arg(long)]
    pub include_vendored: bool,
    /// Parse every file, even those that cannot mention a lock API (for testing the pre-filter)
    #[arg(long, hide = true)]
    pub no_prefilter: bool,
    /// Set by `check` from its `--select`, `--extend-select` and `--ignore`.
    #[arg(skip)]
    pub selection: Selection,
}

/// Package selection, as cargo's commands take it ([`crate::cargo`]).
#[derive(Debug, Args, Default, Clone)]
#[command(next_help_heading = "Package selection (runs `cargo metadata`)")]
pub struct CargoArgs {
    /// Audit the package of this Cargo.toml (a virtual manifest: its default members)
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Audit this workspace member (`name` or `name@version`); repeatable
    #[arg(long, short = 'p', value_name = "SPEC")]
    pub package: Vec<String>,
    /// Audit every workspace member; `--exclude NAME` then leaves a package out
    #[arg(long, alias = "all", conflicts_with = "package")]
    pub workspace: bool,
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
    /// Run only these checks (comma-separated check ids, or `all`); replaces the config's choice
    #[arg(long, value_name = "CHECKS", value_delimiter = ',', value_parser = parse_selector)]
    pub select: Vec<Selector>,
    /// Run these checks too (comma-separated check ids), even those the config turns off
    #[arg(long, value_name = "CHECKS", value_delimiter = ',', value_parser = parse_selector)]
    pub extend_select: Vec<Selector>,
    /// Do not run these checks (comma-separated check ids); wins over --select
    #[arg(long, value_name = "CHECKS", value_delimiter = ',', value_parser = parse_selector)]
    pub ignore: Vec<Selector>,
    /// Print the number of findings per check instead of the findings
    #[arg(long, conflicts_with_all = ["write_baseline", "update_baseline"])]
    pub statistics: bool,
    /// Audit standard input as the file PATH (which need not exist): its config, crate and the
    /// path in the report are PATH's. Give no PATHS, or `-`
    #[arg(long, value_name = "PATH", conflicts_with_all = ["fix", "write_baseline", "update_baseline", "new_since"])]
    pub stdin_filename: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub cargo: CargoArgs,
}

/// A check named by `--select`, `--extend-select` or `--ignore`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selector {
    All,
    Check(crate::vocab::CheckId),
}

impl Selector {
    pub fn covers(self, id: crate::vocab::CheckId) -> bool {
        match self {
            Selector::All => true,
            Selector::Check(c) => c == id,
        }
    }
}

/// A check id, or `all`; an unknown id is an error with the closest id.
fn parse_selector(s: &str) -> Result<Selector, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("all") {
        return Ok(Selector::All);
    }
    match crate::vocab::CheckId::parse(s) {
        Some(id) => Ok(Selector::Check(id)),
        None => {
            let ids = crate::checks::CHECKS.iter().map(|c| c.id.as_str());
            let near = crate::suggest::closest(s, ids)
                .map(|c| format!("did you mean `{c}`? "))
                .unwrap_or_default();
            Err(format!(
                "unknown check `{s}`; {near}`lockaudit rules` lists the check ids"
            ))
        }
    }
}

/// What the command line says about which checks run, applied to each
/// config's severities ([`Selection::apply`]).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub select: Vec<Selector>,
    pub extend_select: Vec<Selector>,
    pub ignore: Vec<Selector>,
}

impl Selection {
    pub fn is_empty(&self) -> bool {
        self.select.is_empty() && self.extend_select.is_empty() && self.ignore.is_empty()
    }

    /// Turns checks on and off in a config's severities, as ruff does:
    /// `--select` replaces the config's set, `--extend-select` adds to it,
    /// and `--ignore` removes from both. A check the config turned off and
    /// the command line selects (by id or `all`) runs at its default severity; one
    /// that stays on keeps the config's severity.
    pub fn apply(
        &self,
        checks: &mut std::collections::BTreeMap<
            crate::vocab::CheckId,
            Option<crate::finding::Severity>,
        >,
    ) {
        if self.is_empty() {
            return;
        }
        for id in crate::vocab::CheckId::ALL {
            let named = |list: &[Selector]| list.iter().any(|s| s.covers(id));
            let configured = checks
                .get(&id)
                .copied()
                .unwrap_or(Some(id.default_severity()));
            let on = if self.ignore.iter().any(|s| s.covers(id)) {
                false
            } else if named(&self.extend_select) {
                true
            } else if !self.select.is_empty() {
                named(&self.select)
            } else {
                configured.is_some()
            };
            let severity = on.then(|| configured.unwrap_or(id.default_severity()));
            checks.insert(id, severity);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InventoryFormat {
    Table,
    Json,
    /// A Markdown table, for a pull-request comment or a job summary
    Markdown,
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
    /// List only the locks added, removed and changed since the git
    /// revision REF (read from git; the work tree is not touched)
    #[arg(long, value_name = "REF")]
    pub new_since: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub cargo: CargoArgs,
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
    /// Leave test code out: tests/ directories, *_test.rs and tests.rs files, and code under #[cfg(test)]
    #[arg(long)]
    pub exclude_tests: bool,
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
pub struct TestPackArgs {
    /// The rule pack (YAML) to test
    #[arg(value_name = "PACK")]
    pub pack: PathBuf,
    /// Fixture files or directories (default: the `.rs` files in PACK's directory and below it)
    #[arg(value_name = "FIXTURES")]
    pub fixtures: Vec<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
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
