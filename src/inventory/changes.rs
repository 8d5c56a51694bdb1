//! `lockaudit inventory --new-since REF`: the locks a change adds, removes
//! and changes, for a reviewer who should not have to read the diff to
//! learn that a pull request takes a new correctness lock without a token.
//!
//! Rows of the two revisions are matched by the lock's identity (path from
//! the repository root, function, API and key, never the line, so moved
//! code and renamed files keep theirs), an unchanged row before a changed
//! one; a row left over on both sides in the same function and API is the
//! same call with a new key, and one of the same API and key whose function
//! is gone, in a function that is new, is the same lock in a renamed
//! function. The `fingerprint` of a row (JSON) hashes its identity and its
//! order among the same.

use std::collections::HashMap;

use serde::Serialize;

use super::LockRow;
use crate::fingerprint::fnv1a;

/// What a change does to the locks.
#[derive(Debug, Serialize)]
pub struct Changes {
    /// The revision compared with, as given.
    pub since: String,
    pub added: Vec<LockRow>,
    pub removed: Vec<LockRow>,
    pub changed: Vec<Changed>,
    /// Locks the same at both revisions (moved lines count as the same).
    pub unchanged: usize,
}

/// One lock, before and after, and the fields that differ.
#[derive(Debug, Serialize)]
pub struct Changed {
    pub fields: Vec<&'static str>,
    pub before: LockRow,
    pub after: LockRow,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Fills in each row's fingerprint from its path (from the repository
/// root), its function, API and key; two such calls in one function are
/// told apart by their order.
pub fn assign_fingerprints(rows: &mut [LockRow]) {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        (&rows[a].path, rows[a].line, rows[a].column).cmp(&(
            &rows[b].path,
            rows[b].line,
            rows[b].column,
        ))
    });
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for i in order {
        let r = &rows[i];
        let base = fnv1a(&["lock", &r.path, &r.function, &r.api, &r.key]);
        let n = seen.entry(base).or_insert(0);
        let fp = fnv1a(&[&format!("{base:016x}"), &n.to_string()]);
        *n += 1;
        rows[i].fingerprint = format!("{fp:016x}");
    }
}

/// The fields a reviewer is told about, as JSON names them, that differ.
fn differing(a: &LockRow, b: &LockRow) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut diff = |name, same: bool| {
        if !same {
            out.push(name);
        }
    };
    diff("function", a.function == b.function);
    diff("key", a.key == b.key);
    diff("backend", a.backend == b.backend);
    diff("wrapper", a.wrapper == b.wrapper);
    diff("owner", a.owner == b.owner);
    diff("purpose", a.purpose == b.purpose);
    diff("expiry", a.expiry == b.expiry);
    diff("token", a.token == b.token);
    diff("release", a.release == b.release);
    diff(
        "consensus",
        a.consensus == b.consensus && a.consensus_source == b.consensus_source,
    );
    out
}

/// Pairs the rows not yet taken whose `key` is the same, in line order:
/// first those the same in every field a reviewer is told about (a new
/// call beside an unchanged one leaves the unchanged one unchanged), then
/// the rest where `allow` says they may be one lock.
fn pair<K: std::hash::Hash + Eq>(
    before: &[LockRow],
    after: &[LockRow],
    taken: &mut [bool],
    placed: &mut [bool],
    pairs: &mut Vec<(usize, usize)>,
    key: impl Fn(&LockRow) -> K,
    allow: impl Fn(&LockRow, &LockRow) -> bool,
) {
    let mut open: HashMap<K, Vec<usize>> = HashMap::new();
    for (i, r) in before.iter().enumerate() {
        if !taken[i] {
            open.entry(key(r)).or_default().push(i);
        }
    }
    for exact in [true, false] {
        for (j, a) in after.iter().enumerate() {
            if placed[j] {
                continue;
            }
            let Some(list) = open.get_mut(&key(a)) else {
                continue;
            };
            let found = list.iter().position(|&i| {
                let b = &before[i];
                if exact {
                    differing(b, a).is_empty()
                } else {
                    allow(b, a)
                }
            });
            if let Some(at) = found {
                let i = list.remove(at);
                taken[i] = true;
                placed[j] = true;
                pairs.push((i, j));
            }
        }
    }
}

/// Matches the rows of two revisions: the same lock is the same file,
/// function, API and key (lines may move); then the same call with a new
/// key (same file, function and API); then the same lock in a renamed
/// function (same file, API and key, where the old function is gone and
/// the new one is new).
pub fn compare(since: &str, before: Vec<LockRow>, after: Vec<LockRow>) -> Changes {
    let mut taken = vec![false; before.len()];
    let mut placed = vec![false; after.len()];
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let any = |_: &LockRow, _: &LockRow| true;
    pair(
        &before,
        &after,
        &mut taken,
        &mut placed,
        &mut pairs,
        |r| {
            (
                r.path.clone(),
                r.function.clone(),
                r.api.clone(),
                r.key.clone(),
            )
        },
        any,
    );
    pair(
        &before,
        &after,
        &mut taken,
        &mut placed,
        &mut pairs,
        |r| (r.path.clone(), r.function.clone(), r.api.clone()),
        any,
    );
    let functions = |rows: &[LockRow]| -> std::collections::HashSet<(String, String)> {
        rows.iter()
            .map(|r| (r.path.clone(), r.function.clone()))
            .collect()
    };
    let (had, has) = (functions(&before), functions(&after));
    pair(
        &before,
        &after,
        &mut taken,
        &mut placed,
        &mut pairs,
        |r| (r.path.clone(), r.api.clone(), r.key.clone()),
        |b, a| {
            !has.contains(&(b.path.clone(), b.function.clone()))
                && !had.contains(&(a.path.clone(), a.function.clone()))
        },
    );
    let mut before: Vec<Option<LockRow>> = before.into_iter().map(Some).collect();
    let mut after: Vec<Option<LockRow>> = after.into_iter().map(Some).collect();
    let mut changed = Vec::new();
    let mut unchanged = 0;
    for (i, j) in pairs {
        let (Some(b), Some(a)) = (before[i].take(), after[j].take()) else {
            continue;
        };
        let fields = differing(&b, &a);
        if fields.is_empty() {
            unchanged += 1;
        } else {
            changed.push(Changed {
                fields,
                before: b,
                after: a,
            });
        }
    }
    let mut added: Vec<LockRow> = after.into_iter().flatten().collect();
    let mut removed: Vec<LockRow> = before.into_iter().flatten().collect();
    added.sort();
    removed.sort();
    changed.sort_by(|a, b| a.after.cmp(&b.after));
    Changes {
        since: since.to_string(),
        added,
        removed,
        changed,
        unchanged,
    }
}

/// The one-line count: `1 lock added, 1 removed, 1 changed, 4 unchanged
/// since main`.
pub fn summary(c: &Changes) -> String {
    format!(
        "{} lock{} added, {} removed, {} changed, {} unchanged since {}",
        c.added.len(),
        crate::report::plural(c.added.len()),
        c.removed.len(),
        c.changed.len(),
        c.unchanged,
        c.since
    )
}

/// A value of a field, as a phrase in a sentence.
fn purpose_phrase(r: &LockRow) -> String {
    match r.purpose.as_str() {
        "missing" => "an unannotated".to_string(),
        "malformed" => "a wrongly annotated".to_string(),
        p if p.starts_with(['a', 'e', 'i', 'o', 'u']) => format!("an {p}"),
        p => format!("a {p}"),
    }
}

fn token_phrase(r: &LockRow) -> &'static str {
    match r.token.as_str() {
        "yes" => "fencing token used",
        "no" => "no fencing token",
        _ => "no fencing token from this API",
    }
}

fn key_phrase(r: &LockRow) -> &str {
    if r.key.is_empty() {
        "(no key)"
    } else {
        &r.key
    }
}

/// What a row is, in one sentence part: `a correctness lock on
/// invoice:{id} (redis, expiry PX 30000, no fencing token, release
/// owner-checked)`.
fn describe(r: &LockRow) -> String {
    let through = match &r.wrapper {
        Some(w) => format!(", through {w}"),
        None => String::new(),
    };
    format!(
        "{} lock on {} ({}{}, expiry {}, {}, release {})",
        purpose_phrase(r),
        key_phrase(r),
        r.backend,
        through,
        r.expiry,
        token_phrase(r),
        r.release
    )
}

/// A field's value for the `before → after` part of a changed lock.
fn field(r: &LockRow, name: &str) -> String {
    let v = match name {
        "function" => r.function.clone(),
        "key" => key_phrase(r).to_string(),
        "backend" => r.backend.clone(),
        "wrapper" => r.wrapper.clone().unwrap_or_else(|| "none".into()),
        "owner" => r.owner.clone().unwrap_or_else(|| "none".into()),
        "purpose" => r.purpose.clone(),
        "expiry" => r.expiry.clone(),
        "token" => r.token.clone(),
        "release" => r.release.clone(),
        "consensus" => match (&r.consensus_source, r.consensus) {
            (Some(src), c) => format!("{} ({src})", if c { "yes" } else { "no" }),
            (None, c) => if c { "yes" } else { "no" }.to_string(),
        },
        _ => String::new(),
    };
    if v.is_empty() {
        "(none)".to_string()
    } else {
        v
    }
}

/// The changes as sentences, one per lock, each piece passed through
/// `esc` (the Markdown cell escaper, or the terminal's).
fn sentences(c: &Changes, esc: &dyn Fn(&str) -> String, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    for r in &c.added {
        out.push(format!(
            "adds {} at {}:{}",
            esc(&describe(r)),
            esc(&r.path),
            r.line
        ));
    }
    for x in &c.changed {
        let what: Vec<String> = x
            .fields
            .iter()
            .map(|f| {
                format!(
                    "{f} {} → {}",
                    esc(&field(&x.before, f)),
                    esc(&field(&x.after, f))
                )
            })
            .collect();
        out.push(format!(
            "changes the {} lock on {} at {}:{}: {}",
            esc(&x.after.backend),
            esc(key_phrase(&x.before)),
            esc(&x.after.path),
            x.after.line,
            what.join("; ")
        ));
    }
    for r in &c.removed {
        out.push(format!(
            "removes {} (was at {}:{})",
            esc(&describe(r)),
            esc(&r.path),
            r.line
        ));
    }
    out.truncate(limit);
    out
}

/// For a terminal or a log.
pub fn text(c: &Changes) -> String {
    let esc = |s: &str| crate::escape::text(s).into_owned();
    let mut s = String::new();
    for line in sentences(c, &esc, usize::MAX) {
        s.push_str(&line);
        s.push('\n');
    }
    s.push_str(&esc(&summary(c)));
    s.push('\n');
    s
}

/// For a pull-request comment or a job summary: the count, then a table
/// with a row per lock the change adds, removes or changes (a changed
/// field shows `before → after`), every cell escaped as the inventory's
/// table is, at most as many rows as the findings' summary shows.
pub fn markdown(c: &Changes) -> String {
    use crate::report::github::{cell, SUMMARY_BYTES, SUMMARY_ROWS};
    let total = c.added.len() + c.removed.len() + c.changed.len();
    let mut s = format!("**{}**\n", cell(&summary(c)));
    if total == 0 {
        return s;
    }
    s.push_str(
        "\n| change | location | backend | api | key | purpose | expiry | token | release | consensus |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    let api = |r: &LockRow| match &r.wrapper {
        Some(w) => format!("wrapper {w} → {}", r.api),
        None => r.api.clone(),
    };
    // One row: `value(name)` gives each field's text, already escaped.
    let push =
        |s: &mut String, change: String, location: String, value: &dyn Fn(&str) -> String| {
            s.push_str(&format!("| {change} | {location} |"));
            for name in [
                "backend",
                "api",
                "key",
                "purpose",
                "expiry",
                "token",
                "release",
                "consensus",
            ] {
                s.push_str(&format!(" {} |", value(name)));
            }
            s.push('\n');
        };
    let value = |r: &LockRow, name: &str| -> String {
        if name == "api" {
            cell(&api(r))
        } else {
            cell(&field(r, name))
        }
    };
    let full = |s: &String, rows: usize| rows == SUMMARY_ROWS || s.len() > SUMMARY_BYTES;
    // A row added or removed whole: its own values.
    let whole = |s: &mut String, change: &str, r: &LockRow, after: &str| {
        let location = format!("{}:{}{after}", cell(&r.path), r.line);
        push(s, change.into(), location, &|n| value(r, n));
    };
    let mut rows = 0;
    for r in &c.added {
        if full(&s, rows) {
            break;
        }
        rows += 1;
        whole(&mut s, "added", r, "");
    }
    for x in &c.changed {
        if full(&s, rows) {
            break;
        }
        rows += 1;
        let what = if x.fields.contains(&"function") {
            format!(
                "changed: function {} → {}",
                cell(&x.before.function),
                cell(&x.after.function)
            )
        } else {
            "changed".to_string()
        };
        push(
            &mut s,
            what,
            format!("{}:{}", cell(&x.after.path), x.after.line),
            &|n| {
                // `wrapper` shows in the api column.
                let differs =
                    x.fields.contains(&n) || (n == "api" && x.fields.contains(&"wrapper"));
                if differs {
                    format!("{} → {}", value(&x.before, n), value(&x.after, n))
                } else {
                    value(&x.after, n)
                }
            },
        );
    }
    for r in &c.removed {
        if full(&s, rows) {
            break;
        }
        rows += 1;
        whole(&mut s, "removed", r, " (before)");
    }
    if total > rows {
        let more = total - rows;
        s.push_str(&format!(
            "\n{more} more {} listed by lockaudit inventory --new-since {} --format json.\n",
            if more == 1 {
                "change is"
            } else {
                "changes are"
            },
            cell(&c.since)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(path: &str, line: usize, function: &str, key: &str, expiry: &str) -> LockRow {
        LockRow {
            path: path.into(),
            line,
            column: 5,
            backend: "redis".into(),
            api: "redis.set-nx-px".into(),
            wrapper: None,
            key: key.into(),
            owner: Some("&token".into()),
            purpose: "correctness".into(),
            expiry: expiry.into(),
            token: "not available from this API".into(),
            release: "owner-checked".into(),
            consensus: false,
            consensus_source: None,
            function: function.into(),
            fingerprint: String::new(),
        }
    }

    fn fp(mut rows: Vec<LockRow>) -> Vec<LockRow> {
        assign_fingerprints(&mut rows);
        rows
    }

    #[test]
    fn moved_lines_are_unchanged_and_each_kind_of_change_is_told() {
        let before = fp(vec![
            row("src/a.rs", 10, "settle", "invoice:{id}", "PX 30000"),
            row("src/a.rs", 40, "report", "report", "PX 5000"),
            row("src/b.rs", 7, "sweep", "sweep", "PX 5000"),
            row("src/b.rs", 20, "rotate", "keys", "PX 5000"),
        ]);
        let after = fp(vec![
            // Moved down by new code above it.
            row("src/a.rs", 25, "settle", "invoice:{id}", "PX 30000"),
            // Its expiry dropped.
            row("src/a.rs", 55, "report", "report", "none"),
            // New.
            row("src/a.rs", 70, "refund", "refund:{id}", "PX 30000"),
            // The same call with a new key.
            row("src/b.rs", 20, "rotate", "keys:{region}", "PX 5000"),
        ]);
        let c = compare("main", before, after);
        assert_eq!(c.unchanged, 1);
        assert_eq!(
            c.added.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
            ["refund:{id}"]
        );
        assert_eq!(
            c.removed.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
            ["sweep"]
        );
        let fields: Vec<(&str, &Vec<&str>)> = c
            .changed
            .iter()
            .map(|x| (x.after.key.as_str(), &x.fields))
            .collect();
        assert_eq!(
            fields,
            [("report", &vec!["expiry"]), ("keys:{region}", &vec!["key"])]
        );
        let text = text(&c);
        assert!(
            text.contains(
                "adds a correctness lock on refund:{id} (redis, expiry PX 30000, no fencing token from this API, release owner-checked) at src/a.rs:70"
            ),
            "{text}"
        );
        assert!(
            text.contains("changes the redis lock on report at src/a.rs:55: expiry PX 5000 → none"),
            "{text}"
        );
        assert!(
            text.contains("removes a correctness lock on sweep"),
            "{text}"
        );
        let mut efficient = row("src/c.rs", 1, "f", "k", "PX 1");
        efficient.purpose = "efficiency".into();
        assert!(describe(&efficient).starts_with("an efficiency lock on k ("));
        assert!(
            text.ends_with("1 lock added, 1 removed, 2 changed, 1 unchanged since main\n"),
            "{text}"
        );
        let md = markdown(&c);
        assert!(
            md.contains("| changed | src/a.rs:55 | redis | redis.set-nx-px | report | correctness | PX 5000 → none |"),
            "{md}"
        );
        assert!(md.contains("| removed | src/b.rs:7 (before) |"), "{md}");
        assert_eq!(
            md.lines().filter(|l| l.starts_with("| ")).count(),
            5,
            "{md}"
        );
    }

    #[test]
    fn a_renamed_function_changes_its_locks_function() {
        let before = fp(vec![
            row("src/a.rs", 10, "fails_when_expired", "job", "PX 1"),
            row("src/a.rs", 30, "other", "other", "PX 1"),
        ]);
        let after = fp(vec![
            row("src/a.rs", 12, "succeeds_when_expired", "job", "PX 1"),
            row("src/a.rs", 30, "other", "other", "PX 1"),
        ]);
        let c = compare("main", before, after);
        assert_eq!((c.added.len(), c.removed.len(), c.unchanged), (0, 0, 1));
        assert_eq!(c.changed[0].fields, ["function"]);
        assert!(
            text(&c).contains("function fails_when_expired → succeeds_when_expired"),
            "{}",
            text(&c)
        );
        assert!(
            markdown(&c).contains(
                "| changed: function fails&#95;when&#95;expired → succeeds&#95;when&#95;expired | src/a.rs:12 |"
            ),
            "{}",
            markdown(&c)
        );
        // Another key in another function is another lock.
        let before = fp(vec![row("src/a.rs", 10, "f", "a", "PX 1")]);
        let after = fp(vec![row("src/a.rs", 10, "g", "b", "PX 1")]);
        let c = compare("main", before, after);
        assert_eq!((c.added.len(), c.removed.len()), (1, 1));
        // A lock removed from `f`, which stays, and one added to `g`, which
        // was there: two locks, not a rename.
        let before = fp(vec![
            row("src/a.rs", 10, "f", "job", "PX 1"),
            row("src/a.rs", 20, "f", "other", "PX 1"),
            row("src/a.rs", 30, "g", "more", "PX 1"),
        ]);
        let after = fp(vec![
            row("src/a.rs", 20, "f", "other", "PX 1"),
            row("src/a.rs", 30, "g", "more", "PX 1"),
            row("src/a.rs", 40, "g", "job", "PX 1"),
        ]);
        let c = compare("main", before, after);
        assert_eq!((c.added.len(), c.removed.len(), c.changed.len()), (1, 1, 0));
    }

    /// A new call beside an unchanged one on the same key leaves the old
    /// one unchanged, however the lines fall.
    #[test]
    fn a_new_call_above_an_old_one_is_the_one_added() {
        let before = fp(vec![row("src/a.rs", 10, "run", "k", "PX 1")]);
        let after = fp(vec![
            row("src/a.rs", 10, "run", "k", "none"),
            row("src/a.rs", 12, "run", "k", "PX 1"),
        ]);
        let c = compare("main", before, after);
        assert_eq!((c.unchanged, c.changed.len()), (1, 0));
        assert_eq!(c.added.len(), 1);
        assert_eq!((c.added[0].line, c.added[0].expiry.as_str()), (10, "none"));
    }

    #[test]
    fn two_calls_of_one_function_on_one_key_are_told_apart() {
        let before = fp(vec![
            row("src/a.rs", 10, "run", "k", "PX 1"),
            row("src/a.rs", 12, "run", "k", "PX 1"),
        ]);
        assert_ne!(before[0].fingerprint, before[1].fingerprint);
        let after = fp(vec![row("src/a.rs", 30, "run", "k", "PX 1")]);
        let c = compare("HEAD", before, after);
        assert_eq!((c.unchanged, c.removed.len(), c.added.len()), (1, 1, 0));
    }

    #[test]
    fn markdown_changes_escape_the_code() {
        let after = fp(vec![row(
            "src/a.rs",
            3,
            "run",
            "lock:{id}|[x](https://e.com) @team",
            "PX 1",
        )]);
        let c = compare("main", Vec::new(), after);
        let md = markdown(&c);
        for markup in ["[x]", "](", "https:", " @team"] {
            assert!(!md.contains(markup), "{markup} in {md}");
        }
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(
            lines[0],
            "**1 lock added, 0 removed, 0 changed, 0 unchanged since main**"
        );
        // Ten cells: no `|` of the code splits one.
        assert_eq!(lines[4].matches(" | ").count(), 9, "{md}");
        assert!(
            lines[4]
                .starts_with("| added | src/a.rs:3 | redis | redis.set-nx-px | lock&#58;{id}\\|"),
            "{md}"
        );
        let none = compare("main", Vec::new(), Vec::new());
        assert_eq!(
            markdown(&none),
            "**0 locks added, 0 removed, 0 changed, 0 unchanged since main**\n"
        );
    }
}
