//! The command line: arguments parsed, each command run, its report
//! written and its exit status chosen. The run a command audits is
//! assembled by [`crate::session`] (files, configs, engines, the audit and
//! its crate passes); reports go out through [`crate::output`]. Nothing
//! else in the crate depends on this module.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::baseline::Baseline;
use crate::checks::{CheckId, CHECKS};
use crate::cli::{
    CheckArgs, Cli, Color, Command, CommonArgs, FailOn, InventoryArgs, InventoryFormat, ListFormat,
};
use crate::config;
use crate::exit::ExitStatus;
use crate::finding::{Finding, Severity};
use crate::report::{self, Format, Summary};
use crate::walk::{self};

use crate::session::{audit, prepare, root_relative, Audit, Prepared};
use crate::session::{audit_stdin, check_config_path, lexically};

use crate::checks::explain_text;
use crate::diag::print_yaml_errors;
use crate::exit::Failure;
use crate::output::write_atomic;
use crate::output::{cwd_root, emit, emit_report};

/// The program: arguments from the environment, parsed, run. With
/// `cargo_subcommand`, the `lockaudit` cargo passes first is dropped.
pub fn main(cargo_subcommand: bool) -> ExitStatus {
    let args = match crate::cli::normalize(std::env::args_os().collect(), cargo_subcommand) {
        Ok(a) => a,
        Err(msg) => {
            crate::escape::eprint_block(&format!("error: {msg}\n"));
            return ExitStatus::Error;
        }
    };
    // `cargo lockaudit --help` says `Usage: cargo lockaudit …`, as cargo's
    // own subcommands do.
    let name = if cargo_subcommand {
        "cargo lockaudit"
    } else {
        "lockaudit"
    };
    let matches = <Cli as clap::CommandFactory>::command()
        .bin_name(name)
        .get_matches_from(args);
    match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => run(cli),
        Err(e) => e.exit(),
    }
}

pub fn run(cli: Cli) -> ExitStatus {
    let result = match cli.command {
        None => check(&cli.check),
        Some(Command::Check(args)) => check(&args),
        Some(Command::Inventory(args)) => inventory(&args),
        Some(Command::Rules(args)) => rules(&args),
        Some(Command::Explain(args)) => explain(&args.check),
        Some(Command::Init(args)) => init(args.force, args.exclude_tests),
        Some(Command::Annotate(args)) => crate::commands::annotate::run(&args),
        Some(Command::Lsp(args)) => crate::commands::lsp::run(&args),
        Some(Command::TestPack(args)) => crate::commands::test_pack::run(&args),
        Some(Command::Completions(args)) => completions(args.shell),
        Some(Command::Manpage) => manpage(),
    };
    match result {
        Ok(s) => s,
        Err(Failure(msg)) => {
            if !msg.is_empty() {
                crate::escape::eprintln(&format!("error: {msg}"));
            }
            ExitStatus::Error
        }
    }
}

/// Whether the human report is coloured. `auto` decides as anstream (and
/// so cargo and clap) do for standard output: `NO_COLOR` (set and not
/// empty) turns colour off, then `CLICOLOR_FORCE` (set and not empty) turns it on
/// even when standard output is not a terminal, `CLICOLOR=0` turns it off,
/// and otherwise a terminal that is not `TERM=dumb` gets colour. A report
/// written with `--output` is coloured only with `--color always`.
fn use_color(c: Color, to_stdout: bool) -> bool {
    match c {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            to_stdout
                && anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
        }
    }
}

/// `check --statistics`: the number of findings of each check (not
/// counting suppressed ones), most frequent first, as ruff prints them.
fn statistics(findings: &[Finding], format: Format) -> String {
    let mut counts: std::collections::BTreeMap<CheckId, usize> = Default::default();
    for f in findings.iter().filter(|f| f.suppressed.is_none()) {
        *counts.entry(f.check).or_default() += 1;
    }
    let mut rows: Vec<(CheckId, usize)> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.as_str().cmp(b.0.as_str())));
    if matches!(format, Format::Json | Format::Sarif) {
        let list: Vec<_> = rows
            .iter()
            .map(|(id, n)| {
                serde_json::json!({
                    "check": id.as_str(),
                    "count": n,
                    "summary": id.info().summary,
                })
            })
            .collect();
        let mut s = serde_json::to_string_pretty(&list).unwrap_or_default();
        s.push('\n');
        return s;
    }
    let count_width = rows
        .iter()
        .map(|(_, n)| n.to_string().len())
        .max()
        .unwrap_or(1);
    let id_width = rows
        .iter()
        .map(|(id, _)| id.as_str().len())
        .max()
        .unwrap_or(0);
    rows.iter()
        .map(|(id, n)| {
            format!(
                "{n:>count_width$}  {:id_width$}  {}\n",
                id.as_str(),
                id.info().summary
            )
        })
        .collect()
}

/// `lockaudit completions SHELL`: the completion script clap_complete
/// generates from the command line's definition.
fn completions(shell: clap_complete::Shell) -> Result<ExitStatus, Failure> {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "lockaudit", &mut out);
    emit(None, &String::from_utf8_lossy(&out))?;
    Ok(ExitStatus::Clean)
}

/// `lockaudit manpage`: the man page clap_mangen renders from the command
/// line's definition (the top level, its options and the subcommands).
fn manpage() -> Result<ExitStatus, Failure> {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    emit(None, &String::from_utf8_lossy(&out))?;
    Ok(ExitStatus::Clean)
}

/// The width of the terminal on stdout: `COLUMNS` when set, else what the
/// terminal says, else 100.
fn terminal_width() -> usize {
    let actual = terminal_size::terminal_size_of(std::io::stdout())
        .map(|(w, _)| usize::from(w.0))
        .filter(|w| *w >= 40)
        .unwrap_or(100);
    columns_or(actual)
}

/// `COLUMNS` when it is set to a usable width, else `default`.
fn columns_or(default: usize) -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|w: &usize| (40..=1000).contains(w))
        .unwrap_or(default)
}

fn fails(findings: &[Finding], fail_on: FailOn) -> bool {
    let threshold = match fail_on {
        FailOn::Never => return false,
        FailOn::Error => Severity::Error,
        FailOn::Warning => Severity::Warning,
        FailOn::Note => Severity::Note,
    };
    findings
        .iter()
        .any(|f| f.suppressed.is_none() && f.severity >= threshold)
}

/// A baseline is read like a config: a regular file, at most 64 MB. One
/// named inside the repository (not under `.git`) must resolve inside it
/// too: a committed symbolic link never leads the read outside or into
/// `.git`, and a link out reads as no file at all, whether its target
/// exists or not. One named elsewhere is the caller's choice. Also
/// returns the text read.
fn read_baseline(path: &Path, p: &Prepared) -> Result<(Baseline, String), Failure> {
    let shown = crate::escape::path(path);
    let cwd = std::fs::canonicalize(&p.cwd).unwrap_or_else(|_| p.cwd.clone());
    let named_inside = lexically(&cwd.join(path))
        .strip_prefix(&p.root)
        .is_ok_and(|rel| !rel.components().any(|c| c.as_os_str() == ".git"));
    if named_inside && !config::inside_repository(path, &p.root) {
        return Err(Failure(format!(
            "{shown}: cannot read baseline: not a regular file inside the repository (a \
             symbolic link out of it, or into `.git`, is not followed)"
        )));
    }
    let text = config::read_input(path, config::MAX_BASELINE_BYTES)
        .map_err(|e| Failure(format!("{shown}: cannot read baseline: {e}")))?;
    let b = Baseline::parse(&text).map_err(|e| Failure(format!("{shown}: {e}")))?;
    Ok((b, text))
}

/// The paths of the packages the cargo flags choose, in place of the
/// PATHS (which must then be left out), and `--exclude` without the
/// package names `--workspace` takes from it.
fn packages(
    cargo: &crate::cli::CargoArgs,
    paths: &mut Vec<PathBuf>,
    common: &mut CommonArgs,
) -> Result<(), Failure> {
    if !cargo.is_set() {
        return Ok(());
    }
    if paths.iter().any(|p| p != Path::new(".")) {
        return Err(Failure(
            "name PATHS or packages (--manifest-path, -p, --workspace), not both".into(),
        ));
    }
    let cwd = std::env::current_dir()?;
    *paths = crate::cargo::package_paths(cargo, &mut common.exclude, &cwd)?;
    if paths.is_empty() {
        return Err(Failure("the packages chosen have no source files".into()));
    }
    Ok(())
}

fn check(args: &CheckArgs) -> Result<ExitStatus, Failure> {
    let chosen;
    let args = if args.cargo.is_set() {
        let mut a = args.clone();
        if a.stdin_filename.is_some() {
            return Err(Failure(
                "--stdin-filename audits standard input: choose no packages".into(),
            ));
        }
        packages(&args.cargo, &mut a.paths, &mut a.common)?;
        chosen = a;
        &chosen
    } else {
        args
    };
    let mut common = args.common.clone();
    common.selection = crate::cli::Selection {
        select: args.select.clone(),
        extend_select: args.extend_select.clone(),
        ignore: args.ignore.clone(),
    };
    let paths: &[PathBuf] = match &args.stdin_filename {
        Some(_)
            if args
                .paths
                .iter()
                .all(|p| p == Path::new(".") || p == Path::new("-")) =>
        {
            &[]
        }
        Some(_) => {
            return Err(Failure(
                "--stdin-filename audits standard input: give no PATHS (or `-`)".into(),
            ))
        }
        None => &args.paths,
    };
    let prepared = prepare(paths, &common)?;
    let mut audit = match &args.stdin_filename {
        Some(name) => audit_stdin(&prepared, name)?,
        None => audit(&prepared, false)?,
    };
    if args.fix {
        audit = fix_and_audit_again(args, &prepared, audit)?;
    }
    for u in &audit.unreadable {
        crate::escape::eprintln(&format!("error: {u}"));
    }
    let tool_error = audit.internal_error || !audit.unreadable.is_empty();
    let to_root = |path: &str| root_relative(path, &prepared.root_prefix, &prepared.cwd);
    // Baselines name files from the repository root, like machine output.
    let rooted = |findings: &[Finding]| -> Vec<Finding> {
        let mut v = findings.to_vec();
        for f in &mut v {
            f.path = to_root(&f.path);
            for r in &mut f.related {
                r.path = to_root(&r.path);
            }
        }
        v
    };
    let audited: BTreeSet<&str> = audit.audited.iter().map(String::as_str).collect();
    if let Some(path) = &args.write_baseline {
        let b = Baseline::from_findings(&rooted(&audit.findings));
        write_atomic(path, b.to_json().as_bytes(), &prepared.root, None)?;
        if !args.quiet {
            crate::escape::eprintln(&format!(
                "wrote {} finding{} to {}",
                b.len(),
                report::plural(b.len()),
                crate::escape::path(path)
            ));
        }
        return Ok(if tool_error {
            ExitStatus::Error
        } else {
            ExitStatus::Clean
        });
    }
    if let Some(path) = &args.update_baseline {
        let (b, read) = read_baseline(path, &prepared)?;
        let before = b.len();
        let (pruned, dropped) = b.prune(&rooted(&audit.findings), &|p| audited.contains(p));
        write_atomic(
            path,
            pruned.to_json().as_bytes(),
            &prepared.root,
            Some(read.as_bytes()),
        )?;
        if !args.quiet {
            crate::escape::eprintln(&format!(
                "{}: dropped {} entr{} that no longer occur{}, kept {} of {before}",
                crate::escape::path(path),
                dropped.len(),
                if dropped.len() == 1 { "y" } else { "ies" },
                if dropped.len() == 1 { "s" } else { "" },
                pruned.len(),
            ));
            for e in &dropped {
                crate::escape::eprintln(&format!(
                    "  dropped: {} in {} ({})",
                    e.check, e.path, e.message
                ));
            }
        }
        return Ok(if tool_error {
            ExitStatus::Error
        } else {
            ExitStatus::Clean
        });
    }
    let mut baselined = 0;
    let mut stale = Vec::new();
    if let Some(path) = &args.baseline {
        let (b, _) = read_baseline(path, &prepared)?;
        let (kept, matched, unmatched) = b.filter(std::mem::take(&mut audit.findings));
        audit.findings = kept;
        baselined = matched;
        // An entry for a file this run did not audit is not stale: it was
        // not looked at.
        stale = unmatched
            .into_iter()
            .filter(|e| audited.contains(e.path.as_str()))
            .collect();
    }
    let mut preexisting = 0;
    if let Some(rev) = &args.new_since {
        let old = crate::gitref::fingerprints_at(rev, &args.paths, &prepared)?;
        let before = audit.findings.len();
        audit
            .findings
            .retain(|f| f.suppressed.is_some() || !old.contains(&f.fingerprint));
        preexisting = before - audit.findings.len();
    }
    let mut summary = Summary::new(audit.files, audit.parsed, &audit.findings);
    summary.baselined = baselined;
    summary.preexisting = preexisting;
    summary.stale_baseline = stale.len();
    summary.stale_baseline_entries = stale;
    summary.tool_errors = audit.unreadable.clone();
    if audit.internal_error {
        summary
            .tool_errors
            .push("internal error while auditing a file (see its parse-error finding)".into());
    }
    let machine = matches!(args.format, Format::Json | Format::Sarif | Format::Github);
    if machine {
        audit.findings = rooted(&audit.findings);
    }
    // The lines a pull request changed, so its annotations come first.
    let changed = match (args.format, &args.new_since) {
        (Format::Github, Some(rev)) => crate::gitref::changed_lines(rev, &prepared.cwd),
        (Format::Github, None) => std::env::var("GITHUB_BASE_REF")
            .ok()
            .filter(|b| !b.is_empty())
            .and_then(|b| {
                crate::gitref::changed_lines(&format!("origin/{b}"), &prepared.cwd)
                    .or_else(|| crate::gitref::changed_lines(&b, &prepared.cwd))
            }),
        _ => None,
    };
    let tty = args.output.is_none() && std::io::stdout().is_terminal();
    let opts = report::Options {
        color: use_color(args.color, args.output.is_none()),
        // Not a terminal: `COLUMNS` or 100 for diagnostics; tables keep a
        // fixed width, so logs do not depend on who ran them.
        width: match (tty, args.format) {
            (true, _) => terminal_width(),
            (false, Format::Human) => columns_or(100),
            (false, _) => 100,
        },
        sources: &audit.sources,
        quiet: args.quiet,
        tty,
        changed: changed.as_ref(),
        root: Some(&prepared.root),
    };
    let text = if args.statistics {
        statistics(&audit.findings, args.format)
    } else {
        report::render(args.format, &audit.findings, &summary, &opts)
    };
    emit_report(
        args.output.as_deref(),
        Some(&prepared.root),
        &text,
        args.format == Format::Github,
    )?;
    if args.format == Format::Github {
        if let Some(file) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|f| !f.is_empty()) {
            let md = report::github_step_summary(&audit.findings, &summary);
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&file)
                .and_then(|mut f| f.write_all(md.as_bytes()));
            if let Err(e) = appended {
                crate::escape::eprintln(&format!(
                    "warning: cannot write the step summary to {}: {e}",
                    crate::escape::path(Path::new(&file))
                ));
            }
        }
    }
    if tool_error {
        return Ok(ExitStatus::Error);
    }
    Ok(if fails(&audit.findings, args.fail_on) {
        ExitStatus::Findings
    } else {
        ExitStatus::Clean
    })
}

/// `check --fix`: applies the exact fixes, says how many, and audits the
/// crates it changed again so that the report shows what remains
/// ([`crate::session::audit_after_fix`]).
fn fix_and_audit_again(
    args: &CheckArgs,
    prepared: &Prepared,
    first: Audit,
) -> Result<Audit, Failure> {
    let applied = crate::commands::fix::apply(prepared, &first, &args.paths)?;
    for s in &applied.skipped {
        crate::escape::eprintln(&format!("warning: {s}"));
    }
    if !args.quiet {
        crate::escape::eprintln(&format!(
            "applied {} fix{} in {} file{}",
            applied.fixes,
            if applied.fixes == 1 { "" } else { "es" },
            applied.files,
            report::plural(applied.files)
        ));
    }
    if applied.fixes == 0 {
        return Ok(first);
    }
    crate::session::audit_after_fix(prepared, first, &applied.written, &crate::source::Disk)
}

fn inventory(args: &InventoryArgs) -> Result<ExitStatus, Failure> {
    let (mut paths, mut common) = (args.paths.clone(), args.common.clone());
    packages(&args.cargo, &mut paths, &mut common)?;
    let prepared = prepare(&paths, &common)?;
    let mut audit = audit(&prepared, true)?;
    for u in &audit.unreadable {
        crate::escape::eprintln(&format!("error: {u}"));
    }
    // Machine output and pull requests: paths from the repository root.
    let from_root = args.format != InventoryFormat::Table;
    let rooted = |rows: &mut [crate::inventory::LockRow]| {
        if from_root {
            for r in rows.iter_mut() {
                r.path = root_relative(&r.path, &prepared.root_prefix, &prepared.cwd);
            }
        }
        // Fingerprints are printed in JSON only.
        if args.format == InventoryFormat::Json {
            crate::inventory::changes::assign_fingerprints(rows);
        }
    };
    rooted(&mut audit.locks);
    if let Some(rev) = &args.new_since {
        // The paths audited now (a cargo package selection expanded).
        let mut before = crate::gitref::locks_at(rev, &paths, &prepared)?;
        rooted(&mut before);
        let changes =
            crate::inventory::changes::compare(rev, before, std::mem::take(&mut audit.locks));
        let text = match args.format {
            InventoryFormat::Json => {
                let mut s = serde_json::to_string_pretty(&changes)?;
                s.push('\n');
                s
            }
            InventoryFormat::Markdown => crate::inventory::changes::markdown(&changes),
            InventoryFormat::Table => crate::inventory::changes::text(&changes),
        };
        emit_report(args.output.as_deref(), Some(&prepared.root), &text, false)?;
        return Ok(if audit.internal_error || !audit.unreadable.is_empty() {
            ExitStatus::Error
        } else {
            ExitStatus::Clean
        });
    }
    let text = match args.format {
        InventoryFormat::Json => {
            let mut s = serde_json::to_string_pretty(&serde_json::json!({ "locks": audit.locks }))?;
            s.push('\n');
            s
        }
        InventoryFormat::Markdown => crate::inventory::markdown(&audit.locks),
        InventoryFormat::Table => {
            let tty = args.output.is_none() && std::io::stdout().is_terminal();
            let opts = report::Options {
                color: false,
                width: if tty { terminal_width() } else { 160 },
                sources: &audit.sources,
                quiet: false,
                tty,
                changed: None,
                root: None,
            };
            crate::inventory::table(&audit.locks, &opts)
        }
    };
    emit_report(args.output.as_deref(), Some(&prepared.root), &text, false)?;
    Ok(if audit.internal_error || !audit.unreadable.is_empty() {
        ExitStatus::Error
    } else {
        ExitStatus::Clean
    })
}

/// `lockaudit rules`: every check with the severity it runs at here, the
/// ones the config changes marked with their default.
fn rules(args: &crate::cli::RulesArgs) -> Result<ExitStatus, Failure> {
    let cwd = std::env::current_dir()?;
    if let Some(p) = &args.config {
        check_config_path(p)?;
    }
    let path = args.config.clone().or_else(|| config::discover(&cwd));
    let settings = match &path {
        Some(p) => {
            let shown = walk::display_path(p, &cwd);
            // `--config` is trusted; a discovered config must stay inside
            // its repository, as in every command.
            let loaded = if args.config.is_some() {
                config::load(p, &shown)
            } else {
                config::load_discovered(p, &shown)
            };
            loaded.map_err(|e| {
                print_yaml_errors(&e);
                Failure(String::new())
            })?
        }
        None => config::Settings::default(),
    };
    let shown_config = path
        .as_deref()
        .map(|p| walk::display_path(p, &cwd))
        .unwrap_or_default();
    let severity = |id: CheckId| settings.severity(id).map_or("off", |s| s.as_str());
    let overridden = |id: CheckId| {
        settings.checks.contains_key(&id) && settings.severity(id) != Some(id.default_severity())
    };
    let text = match args.format {
        ListFormat::Json => {
            let list: Vec<_> = CHECKS
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "id": c.id.as_str(),
                        "severity": severity(c.id),
                        "default_severity": c.severity.as_str(),
                        "overridden": overridden(c.id),
                        "summary": c.summary,
                    })
                })
                .collect();
            let mut s = serde_json::to_string_pretty(&list)?;
            s.push('\n');
            s
        }
        ListFormat::Text => {
            let width = CHECKS
                .iter()
                .map(|c| c.id.as_str().len())
                .max()
                .unwrap_or(0);
            let mut s = String::new();
            let mut changed = Vec::new();
            for c in CHECKS {
                let mut sev = severity(c.id).to_string();
                if overridden(c.id) {
                    sev.push('*');
                    changed.push(format!(
                        "{} (default {})",
                        c.id.as_str(),
                        c.severity.as_str()
                    ));
                }
                s.push_str(&format!(
                    "{:width$}  {:8}  {}\n",
                    c.id.as_str(),
                    sev,
                    c.summary
                ));
            }
            if !changed.is_empty() {
                s.push_str(&format!(
                    "\n* set by {shown_config}: {}\n",
                    changed.join(", ")
                ));
            }
            s
        }
    };
    emit(None, &text)?;
    Ok(ExitStatus::Clean)
}

fn explain(id: &str) -> Result<ExitStatus, Failure> {
    let Some(check) = CheckId::parse(id) else {
        let ids: BTreeSet<&str> = CHECKS.iter().map(|c| c.id.as_str()).collect();
        let near = crate::suggest::closest(id, ids.iter().copied())
            .map(|c| format!("did you mean `{c}`? "))
            .unwrap_or_default();
        return Err(Failure(format!(
            "unknown check `{id}`; {near}the checks are: {}",
            ids.into_iter().collect::<Vec<_>>().join(", ")
        )));
    };
    emit(None, &explain_text(check))?;
    Ok(ExitStatus::Clean)
}

fn init(force: bool, exclude_tests: bool) -> Result<ExitStatus, Failure> {
    let path = Path::new(config::CONFIG_NAMES[0]);
    if path.exists() && !force {
        return Err(Failure(format!(
            "{} already exists (use --force to overwrite)",
            crate::escape::path(path)
        )));
    }
    write_atomic(
        path,
        config::starter(exclude_tests).as_bytes(),
        &cwd_root(),
        None,
    )?;
    crate::escape::eprintln(&format!("wrote {}", crate::escape::path(path)));
    if !exclude_tests {
        crate::escape::eprintln(
            "note: test code is audited; `lockaudit init --force --exclude-tests` writes a config that leaves out tests/ directories, *_test.rs and tests.rs files, and code under #[cfg(test)]",
        );
    }
    Ok(ExitStatus::Clean)
}

#[cfg(test)]
mod tests {
    use crate::session::generated;

    #[test]
    fn generated_files_are_told_by_their_header_and_look_alikes_are_not() {
        for header in [
            "// @generated by prost-build.",
            "// This file is @generated by prost-build.",
            "/* automatically generated by rust-bindgen 0.73.2 */",
            "// Code generated by protoc-gen-foo. DO NOT EDIT.",
            "//! This file was auto-generated by build.rs",
            "// THIS FILE IS AUTOMATICALLY GENERATED BY a script",
            "#![allow(unused)] // @generated",
        ] {
            let text = format!("\n{header}\npub fn f() {{}}\n");
            assert!(generated(text.as_bytes()), "{header}");
        }
        for header in [
            "//! Keys are auto-generated by the caller.",
            "/// Lock ids are automatically generated by the server.",
            "// see the code generated by the macro below",
            "let s = \"@generated\";",
            "// @generated",
        ] {
            // The last one is on the sixth line: too late to be a header.
            let text = if header == "// @generated" {
                format!("\n\n\n\n\n{header}\n")
            } else {
                format!("{header}\npub fn f() {{}}\n")
            };
            assert!(!generated(text.as_bytes()), "{header}");
        }
    }
}
