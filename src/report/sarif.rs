//! `--format sarif`: SARIF 2.1.0 as GitHub code scanning ingests it and the
//! SARIF Multitool validates it clean (`Sarif;Gh` rule kinds): every check in
//! `rules[]`, relative URIs under `%SRCROOT%`, full 1-based regions,
//! `partialFingerprints.primaryLocationLineHash`, and suppressed findings
//! kept with an `inSource` suppression.

use serde_json::{json, Value};

use super::Summary;
use crate::checks::{CheckId, CHECKS};
use crate::finding::{Finding, Severity};

pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
pub const INFORMATION_URI: &str = "https://github.com/lockaudit/lockaudit";

/// Where the book's page of a check lives in the repository: the page
/// generated from the check's `explain` text (`docs/src/checks/<id>.md`).
/// SARIF `helpUri` and the language server's diagnostic links point here.
pub fn help_uri(id: &str) -> String {
    format!("{INFORMATION_URI}/blob/main/docs/src/checks/{id}.md")
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// `missing-purpose` → `MissingPurpose`.
pub fn pascal(id: &str) -> String {
    id.split('-')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// The first paragraph of `## What it does` in a check's docs, on one
/// line; when it ends with a colon, the list that follows it too. At most
/// 1000 characters (GitHub accepts 1024).
pub fn full_description(docs: &str) -> String {
    let section: Vec<&str> = docs
        .lines()
        .skip_while(|l| !l.starts_with("## What it does"))
        .skip(1)
        .take_while(|l| !l.starts_with("## ") && !l.starts_with("```"))
        .collect();
    let mut blocks = section
        .split(|l| l.trim().is_empty())
        .filter(|b| !b.is_empty());
    let mut text = blocks
        .next()
        .unwrap_or_default()
        .iter()
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join(" ");
    if text.ends_with(':') {
        let mut items: Vec<String> = Vec::new();
        for l in blocks.next().unwrap_or_default() {
            match l.trim_start().strip_prefix("- ") {
                Some(item) => items.push(item.trim().to_string()),
                None => {
                    if let Some(last) = items.last_mut() {
                        last.push(' ');
                        last.push_str(l.trim());
                    }
                }
            }
        }
        if !items.is_empty() {
            text.push(' ');
            text.push_str(&items.join(" "));
        }
    }
    let text = text.replace("**", "");
    if text.chars().count() > 1000 {
        text.chars().take(999).collect::<String>() + "…"
    } else {
        text
    }
}

/// Markdown to plain text, good enough for `help.text`.
fn plain(md: &str) -> String {
    md.lines()
        .filter(|l| !l.starts_with("```"))
        .map(|l| l.trim_start_matches("## ").replace('`', ""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

pub fn rules() -> Vec<Value> {
    CHECKS
        .iter()
        .map(|c| {
            let id = c.id.as_str();
            json!({
                "id": id,
                "name": pascal(id),
                "shortDescription": { "text": capitalise(c.summary) + "." },
                "fullDescription": { "text": full_description(c.docs) },
                "help": {
                    "text": plain(c.docs),
                    "markdown": c.docs,
                },
                "helpUri": help_uri(id),
                "defaultConfiguration": { "level": level(c.severity) },
                "properties": {
                    "tags": c.tags,
                    "precision": c.precision,
                    "problem.severity": match c.severity {
                        Severity::Error => "error",
                        Severity::Warning => "warning",
                        Severity::Note => "recommendation",
                    },
                },
            })
        })
        .collect()
}

fn rule_index(id: CheckId) -> usize {
    CHECKS.iter().position(|c| c.id == id).unwrap_or(0)
}

fn message_text(f: &Finding) -> String {
    let mut m = capitalise(&f.message);
    m.push('.');
    if let Some(h) = &f.help {
        m.push_str(" Help: ");
        m.push_str(h);
    }
    m
}

fn region(f: &Finding) -> Value {
    let end_line = f.span.end.line.max(f.span.start.line);
    let mut end_column = f.span.end.column;
    if end_line == f.span.start.line && end_column <= f.span.start.column {
        end_column = f.span.start.column + 1;
    }
    json!({
        "startLine": f.span.start.line.max(1),
        "startColumn": f.span.start.column.max(1),
        "endLine": end_line.max(1),
        "endColumn": end_column.max(1),
    })
}

/// A SARIF `fix`: one artifact change with a replacement per edit. An
/// insertion deletes the empty region at its position.
fn fix_json(f: &Finding, fix: &crate::fix::Fix) -> Value {
    let replacements: Vec<Value> = fix
        .edits
        .iter()
        .map(|e| {
            json!({
                "deletedRegion": {
                    "startLine": e.span.start.line,
                    "startColumn": e.span.start.column,
                    "endLine": e.span.end.line,
                    "endColumn": e.span.end.column,
                },
                "insertedContent": { "text": e.replacement },
            })
        })
        .collect();
    json!({
        "description": { "text": capitalise(&fix.description) + "." },
        "artifactChanges": [{
            "artifactLocation": artifact_location(&f.path),
            "replacements": replacements,
        }],
    })
}

/// `root`: the directory the relative paths are relative to (the
/// repository root); the current directory when not given.
pub fn render(findings: &[Finding], summary: &Summary, root: Option<&std::path::Path>) -> String {
    render_with_root(findings, summary, &root_uri(root))
}

fn root_uri(root: Option<&std::path::Path>) -> String {
    let dir = match root {
        Some(r) => r.to_path_buf(),
        None => std::env::current_dir().unwrap_or_default(),
    };
    // A backslash separates only on Windows; elsewhere it is part of a
    // name, and is percent-encoded below.
    let mut s = dir.to_string_lossy().into_owned();
    if cfg!(windows) {
        s = s.replace('\\', "/");
    }
    if !s.starts_with('/') {
        s.insert(0, '/');
    }
    if !s.ends_with('/') {
        s.push('/');
    }
    format!("file://{}", percent_encode_path(&s))
}

fn percent_encode_path(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The run's invocation: whether lockaudit audited everything, and if not, why.
fn invocation(summary: &Summary) -> Value {
    let mut inv = json!({ "executionSuccessful": summary.tool_errors.is_empty() });
    if !summary.tool_errors.is_empty() {
        inv["toolExecutionNotifications"] = summary
            .tool_errors
            .iter()
            .map(|e| json!({ "level": "error", "message": { "text": e } }))
            .collect();
    }
    inv
}

/// A finding's file as a SARIF artifact location: relative to `%SRCROOT%`
/// (the repository root) when the path is relative, an absolute `file:`
/// URI otherwise (a path outside the root).
fn artifact_location(path: &str) -> Value {
    let absolute = path.starts_with('/') || path.as_bytes().get(1) == Some(&b':');
    if absolute {
        let mut p = path.to_string();
        if !p.starts_with('/') {
            p.insert(0, '/');
        }
        json!({ "uri": format!("file://{}", percent_encode_path(&p)) })
    } else {
        json!({ "uri": percent_encode_path(path), "uriBaseId": "%SRCROOT%" })
    }
}

pub fn render_with_root(findings: &[Finding], summary: &Summary, root: &str) -> String {
    let results: Vec<Value> = findings
        .iter()
        .map(|f| {
            let mut r = json!({
                "ruleId": f.check.as_str(),
                "ruleIndex": rule_index(f.check),
                "level": level(f.severity),
                "message": { "text": message_text(f) },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": artifact_location(&f.path),
                        "region": region(f),
                    }
                }],
                "partialFingerprints": {
                    "primaryLocationLineHash": format!("{}:1", f.fingerprint),
                },
            });
            // The secondary labels of the file, then the places elsewhere
            // (the call sites that reach a lock call in a wrapper), which
            // the message links by id so code scanning shows them.
            let places = f
                .labels
                .iter()
                .map(|l| (f.path.as_str(), l.span, l.message.as_str()))
                .chain(
                    f.related
                        .iter()
                        .map(|r| (r.path.as_str(), r.span, r.message.as_str())),
                );
            let related: Vec<Value> = places
                .enumerate()
                .map(|(i, (path, span, message))| {
                    let lf = Finding { span, ..f.clone() };
                    json!({
                        "id": i + 1,
                        "physicalLocation": {
                            "artifactLocation": artifact_location(path),
                            "region": region(&lf),
                        },
                        "message": { "text": capitalise(message) + "." },
                    })
                })
                .collect();
            if !related.is_empty() {
                r["relatedLocations"] = Value::Array(related);
            }
            if !f.related.is_empty() {
                let first = f.labels.len() + 1;
                let links: Vec<String> = (first..first + f.related.len())
                    .map(|id| format!("[call site]({id})"))
                    .collect();
                // With a link in it, a literal bracket is escaped (SARIF
                // 2.1.0 §3.11.6).
                let text = r["message"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .replace('[', "\\[")
                    .replace(']', "\\]");
                r["message"]["text"] =
                    Value::String(format!("{text} Reached from: {}.", links.join(", ")));
            }
            if let Some(fix) = &f.fix {
                r["fixes"] = json!([fix_json(f, fix)]);
            }
            if let Some(j) = &f.suppressed {
                let mut s = json!({ "kind": "inSource", "status": "accepted" });
                if !j.is_empty() {
                    s["justification"] = Value::String(j.clone());
                }
                r["suppressions"] = json!([s]);
            }
            r
        })
        .collect();
    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "lockaudit",
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "informationUri": INFORMATION_URI,
                    "rules": rules(),
                }
            },
            "originalUriBaseIds": {
                "%SRCROOT%": { "uri": root }
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
            "invocations": [invocation(summary)],
        }]
    });
    let mut s = serde_json::to_string_pretty(&log).expect("sarif serializes");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_could_not_read_a_file_is_not_successful() {
        let summary = Summary {
            tool_errors: vec!["src/a.rs: permission denied".into()],
            ..Summary::default()
        };
        let log: Value =
            serde_json::from_str(&render_with_root(&[], &summary, "file:///repo/")).unwrap();
        let inv = &log["runs"][0]["invocations"][0];
        assert_eq!(inv["executionSuccessful"], false);
        assert_eq!(inv["toolExecutionNotifications"][0]["level"], "error");
        let clean: Value =
            serde_json::from_str(&render_with_root(&[], &Summary::default(), "file:///repo/"))
                .unwrap();
        assert_eq!(
            clean["runs"][0]["invocations"][0]["executionSuccessful"],
            true
        );
        assert!(clean["runs"][0]["invocations"][0]
            .get("toolExecutionNotifications")
            .is_none());
    }

    #[test]
    fn full_description_takes_the_list_after_a_colon() {
        let docs = "# x\n\n## What it does\n\nReports two shapes:\n\n- **one**: a\n  b;\n- two.\n\nMore.\n";
        assert_eq!(full_description(docs), "Reports two shapes: one: a b; two.");
    }
}
