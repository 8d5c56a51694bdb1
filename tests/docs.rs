//! The documentation: the book under `docs/` and the README.
//!
//! - Each check's page, `docs/src/checks/<id>.md`, is generated from the
//!   check's `explain` text (its `src/checks/<id>.md` beside the code), and
//!   the lists of checks in the README, the book's checks chapter and its
//!   table of contents from the registry. A stale one fails with its path;
//!   `LOCKAUDIT_BLESS=1 cargo test --test docs` rewrites them.
//! - Every relative link of the README and the book reaches a file (and a
//!   heading, when it names one); the book's links stay inside the book.
//! - Every page is in the table of contents, every flag and subcommand is
//!   on the command-line page, and SARIF `helpUri`s name existing pages.

mod common;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use clap::CommandFactory;
use lockaudit::checks::CHECKS;

use common::{files_under, rel, root};

const BLESS: &str = "LOCKAUDIT_BLESS=1 cargo test --test docs";

fn blessing() -> bool {
    std::env::var_os("LOCKAUDIT_BLESS").is_some()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn book() -> PathBuf {
    root().join("docs/src")
}

/// Compares `path` with what it should hold; rewrites it when blessing,
/// else records it as stale.
fn sync(path: &Path, want: &str, stale: &mut Vec<String>) {
    let have = std::fs::read_to_string(path).ok();
    if have.as_deref() == Some(want) {
        return;
    }
    if blessing() {
        std::fs::write(path, want).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    } else {
        stale.push(rel(path));
    }
}

fn fail_if_stale(stale: &[String]) {
    assert!(
        stale.is_empty(),
        "generated documentation is stale:\n  {}\nregenerate it with `{BLESS}`",
        stale.join("\n  ")
    );
}

/// A check's page: its `explain` text, under a line saying where it comes
/// from.
fn check_page(id: lockaudit::checks::CheckId) -> String {
    format!(
        "<!-- Generated from src/checks/{}.md by `{BLESS}`: edit that file, not this one. -->\n\n{}",
        id.as_str().replace('-', "_"),
        lockaudit::checks::explain_text(id)
    )
}

/// `text` with the lines between the `<!-- NAME:start -->` and
/// `<!-- NAME:end -->` lines replaced by `want`; `None` when the markers
/// are missing. A marker may be indented (in a list of SUMMARY.md).
fn with_block(text: &str, name: &str, want: &str) -> Option<String> {
    let start = format!("<!-- {name}:start -->\n");
    let end = format!("<!-- {name}:end -->");
    let a = text.find(&start)? + start.len();
    let b = a + text[a..].find(&end)?;
    let b = text[a..b].rfind('\n').map_or(a, |i| a + i + 1);
    Some(format!("{}{want}{}", &text[..a], &text[b..]))
}

fn sync_block(path: &Path, name: &str, want: &str, stale: &mut Vec<String>) {
    let text = read(path);
    let new = with_block(&text, name, want)
        .unwrap_or_else(|| panic!("{} lacks the `{name}` markers", rel(path)));
    sync(path, &new, stale);
}

/// A table of the checks, each linked to its page under `pages`.
fn checks_table(pages: &str) -> String {
    let mut s = String::from("| check | default | fires when |\n|---|---|---|\n");
    for c in CHECKS {
        let id = c.id.as_str();
        writeln!(
            s,
            "| [`{id}`]({pages}{id}.md) | {} | {} |",
            c.severity.as_str(),
            c.summary
        )
        .unwrap();
    }
    s
}

#[test]
fn check_pages_are_generated_from_the_explain_text() {
    let dir = book().join("checks");
    let mut stale = Vec::new();
    let mut ids = BTreeSet::new();
    for c in CHECKS {
        ids.insert(c.id.as_str().to_string());
        sync(
            &dir.join(format!("{}.md", c.id.as_str())),
            &check_page(c.id),
            &mut stale,
        );
    }
    // A page whose check no longer exists.
    for page in files_under(&dir, "md", |_| false) {
        let stem = page.file_stem().unwrap().to_string_lossy().into_owned();
        if !ids.contains(&stem) {
            if blessing() {
                std::fs::remove_file(&page).unwrap();
            } else {
                stale.push(format!("{} (no such check)", rel(&page)));
            }
        }
    }
    fail_if_stale(&stale);
}

#[test]
fn lists_of_checks_are_generated_from_the_registry() {
    let mut stale = Vec::new();
    sync_block(
        &root().join("README.md"),
        "checks-table",
        &checks_table("docs/src/checks/"),
        &mut stale,
    );
    sync_block(
        &book().join("checks.md"),
        "checks-table",
        &checks_table("checks/"),
        &mut stale,
    );
    let mut summary = String::new();
    for c in CHECKS {
        let id = c.id.as_str();
        writeln!(summary, "  - [{id}](checks/{id}.md)").unwrap();
    }
    sync_block(&book().join("SUMMARY.md"), "checks", &summary, &mut stale);
    fail_if_stale(&stale);
}

/// The README and every page of the book.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md")];
    docs.extend(files_under(&book(), "md", |_| false));
    docs
}

/// Which lines of `text` belong to fenced code blocks (the fences
/// included).
fn fenced(text: &str) -> Vec<bool> {
    let mut out = Vec::new();
    let mut open: Option<String> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let mark: String = t.chars().take_while(|c| *c == '`' || *c == '~').collect();
        match &open {
            Some(o) if mark.len() >= o.len() && mark.starts_with(&o[..1]) => open = None,
            Some(_) => {}
            None if mark.len() >= 3 => open = Some(mark),
            None => {
                out.push(false);
                continue;
            }
        }
        out.push(true);
    }
    out
}

/// `text` with fenced code blocks and inline code spans blanked out, so
/// that what looks like a link inside code is not one.
fn prose(text: &str) -> String {
    let mut out = String::new();
    for (line, code) in text.lines().zip(fenced(text)) {
        if !code {
            out.push_str(line);
        }
        out.push('\n');
    }
    // Inline code: a run of backticks up to the next run of the same length.
    let mut keep = String::with_capacity(out.len());
    let mut i = 0;
    while i < out.len() {
        if out.as_bytes()[i] == b'`' {
            let n = out[i..].bytes().take_while(|b| *b == b'`').count();
            let ticks = "`".repeat(n);
            // An unclosed run is literal backticks.
            let len = out[i + n..].find(&ticks).map_or(n, |j| n + j + n);
            keep.push_str(&if len > n { " ".repeat(len) } else { ticks });
            i += len;
            continue;
        }
        let c = out[i..].chars().next().unwrap();
        keep.push(c);
        i += c.len_utf8();
    }
    keep
}

/// The anchors of a Markdown file: its headings as GitHub and mdBook name
/// them (lowercase; letters, digits, `-` and `_` kept, white space made
/// `-`, the rest dropped; a repeated one gets `-1`, `-2`), and explicit
/// `id="…"` attributes.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for (line, code) in text.lines().zip(fenced(text)) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if code || !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug: String = line[hashes..]
            .trim()
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '-' || c == '_' {
                    c.to_lowercase().next()
                } else if c.is_whitespace() {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    let mut rest = text;
    while let Some(i) = rest.find("id=\"") {
        let tail = &rest[i + 4..];
        if let Some(j) = tail.find('"') {
            out.insert(tail[..j].to_string());
        }
        rest = tail;
    }
    out
}

/// The link targets of a Markdown text: inline `[text](target)` and
/// reference definitions `[name]: target`, outside code.
fn links(text: &str) -> Vec<String> {
    let p = prose(text);
    let mut out = Vec::new();
    let mut rest = p.as_str();
    while let Some(i) = rest.find("](") {
        let tail = &rest[i + 2..];
        let end = tail.find(')').unwrap_or(tail.len());
        let target = tail[..end].split_whitespace().next().unwrap_or("");
        out.push(target.trim_matches(|c| c == '<' || c == '>').to_string());
        rest = &tail[end..];
    }
    for line in p.lines() {
        let t = line.trim_start();
        if let Some(close) = t.strip_prefix('[').and_then(|r| r.find("]:")) {
            let target = t[close + 3..].split_whitespace().next().unwrap_or("");
            out.push(target.to_string());
        }
    }
    out
}

/// `path` with `.` and `..` resolved, without touching the file system.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = read(&doc);
        let in_book = doc.starts_with(book());
        for target in links(&text) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                doc.clone()
            } else {
                normalise(&doc.parent().unwrap().join(path))
            };
            let here = rel(&doc);
            if !file.exists() {
                bad.push(format!("{here}: `{target}`: no such file"));
                continue;
            }
            if in_book && !file.starts_with(book()) {
                bad.push(format!(
                    "{here}: `{target}` leaves docs/src, so the built book cannot follow it \
                     (name the file as code, or link its page on GitHub)"
                ));
            }
            if let Some(f) = fragment {
                let is_md = file.extension().is_some_and(|e| e == "md");
                if is_md && !anchors(&read(&file)).contains(f) {
                    bad.push(format!("{here}: `{target}`: no heading `#{f}` there"));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} relative links checked");
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn every_page_is_in_the_table_of_contents() {
    let summary = read(&book().join("SUMMARY.md"));
    let listed: BTreeSet<PathBuf> = links(&summary)
        .iter()
        .map(|l| normalise(&book().join(l)))
        .collect();
    let missing: Vec<String> = files_under(&book(), "md", |_| false)
        .into_iter()
        .filter(|p| !p.ends_with("SUMMARY.md") && !listed.contains(p))
        .map(|p| rel(&p))
        .collect();
    assert!(
        missing.is_empty(),
        "pages missing from docs/src/SUMMARY.md (mdBook would not build them):\n{}",
        missing.join("\n")
    );
}

/// Every subcommand and every flag users can pass is on the command-line
/// page (a hidden flag need not be).
#[test]
fn the_command_line_page_documents_every_subcommand_and_flag() {
    let page = read(&book().join("command-line.md"));
    let cli = lockaudit::cli::Cli::command();
    let mut missing = Vec::new();
    let mut flags = 0;
    let mut commands = vec![(String::from("check"), &cli)];
    commands.extend(cli.get_subcommands().map(|c| (c.get_name().to_string(), c)));
    for (name, cmd) in commands {
        if !page.contains(&format!("lockaudit {name}")) {
            missing.push(format!("the subcommand `lockaudit {name}`"));
        }
        for arg in cmd.get_arguments() {
            if arg.is_hide_set() {
                continue;
            }
            let Some(long) = arg.get_long() else { continue };
            if long == "help" || long == "version" {
                continue;
            }
            flags += 1;
            if !page.contains(&format!("`--{long}")) {
                missing.push(format!("`--{long}` of `lockaudit {name}`"));
            }
            if let Some(short) = arg.get_short() {
                if !page.contains(&format!("`-{short}`")) {
                    missing.push(format!("`-{short}` (`--{long}`) of `lockaudit {name}`"));
                }
            }
        }
    }
    assert!(flags > 20, "only {flags} flags seen");
    assert!(
        missing.is_empty(),
        "docs/src/command-line.md does not document:\n{}",
        missing.join("\n")
    );
}

/// SARIF `helpUri` and the language server's links name each check's page
/// in the repository.
#[test]
fn help_uris_name_the_check_pages() {
    let base = "https://github.com/lockaudit/lockaudit/blob/main/";
    for c in CHECKS {
        let uri = lockaudit::report::sarif::help_uri(c.id.as_str());
        let path = uri
            .strip_prefix(base)
            .unwrap_or_else(|| panic!("{uri} is not under {base}"));
        assert_eq!(path, format!("docs/src/checks/{}.md", c.id.as_str()));
        assert!(root().join(path).is_file(), "{path} does not exist");
    }
}

/// The README is what a new user reads first: what lockaudit is, the two
/// commands of the quick start, and the way into the book.
#[test]
fn the_readme_stays_short_and_leads_into_the_book() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines: move the detail into the book (docs/src/)"
    );
    for needle in [
        "cargo run --release -- check fixtures/",
        "cargo test",
        "(docs/src/getting-started.md)",
        "(docs/src/installation.md)",
        "(docs/src/annotation.md)",
        "(docs/src/SUMMARY.md)",
    ] {
        assert!(readme.contains(needle), "README.md lacks `{needle}`");
    }
}
