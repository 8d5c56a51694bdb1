//! `lockaudit inventory`: one row per acquisition — where, backend, API,
//! key, purpose, expiry, token, release. The audit a team asks for first.

use serde::Serialize;

pub mod changes;

use crate::checks::CheckCtx;
use crate::checks::{connection_of, Conn};
use crate::model::{Event, ExpiryState};
use crate::pack::{Role, Scope, TokenKind};

#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct LockRow {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub backend: String,
    pub api: String,
    /// The team's wrapper(s) the lock is taken through, outermost first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrapper: Option<String>,
    pub key: String,
    /// The value the acquisition stores to say who holds the lock, as
    /// written (`&token`, `"worker-1"`), where the pack says where it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    pub purpose: String,
    pub expiry: String,
    pub token: String,
    pub release: String,
    /// Whether the backend decides by consensus (a failover cannot grant
    /// the lock twice): the pack's fact, or the config's.
    pub consensus: bool,
    /// Where the config said so (`lockaudit.yaml:7:3: reason`), when a
    /// config's `backends:` overrode the pack.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consensus_source: Option<String>,
    /// The function the call site is in (`Type::method`).
    pub function: String,
    /// The lock's identity across unrelated edits (see
    /// [`assign_fingerprints`]); empty until assigned.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
}

/// One row per call site: a lock call inside a wrapper that is called, and
/// a call that a called wrapper hands back, are rows at the outermost
/// calls that reach them (with the wrapper chain), not rows of their own.
/// A lock taken by a read and then a write is a row at the write.
pub fn rows(ctx: &CheckCtx) -> Vec<LockRow> {
    ctx.acquisitions()
        .filter(|e| ctx.outcome_here(e))
        .map(|e| row(ctx, e))
        .collect()
}

fn row(ctx: &CheckCtx, e: &Event) -> LockRow {
    let api = ctx.api(e);
    let purpose = match ctx.lookup(e) {
        crate::directives::PurposeLookup::Found { purpose, .. }
        | crate::directives::PurposeLookup::Inherited { purpose } => purpose.as_str().to_string(),
        crate::directives::PurposeLookup::None => match ctx.purpose(e) {
            Some(p) => format!("{} (default)", p.as_str()),
            None => "missing".to_string(),
        },
        _ => "malformed".to_string(),
    };
    let expiry = match &e.expiry {
        ExpiryState::Set(Some(v)) => v.clone(),
        // When the lock ends on its own: a TTL (as written, or `set` when
        // it is set out of sight), a lease the server keeps, the end of
        // the session or transaction holding it, or never.
        ExpiryState::Set(None) => "set".to_string(),
        ExpiryState::Missing => "none".to_string(),
        ExpiryState::Server(_) => "lease".to_string(),
        ExpiryState::Session if api.scope == Some(Scope::Transaction) => {
            "transaction end".to_string()
        }
        ExpiryState::Session => "session end".to_string(),
        ExpiryState::Unknown => "unknown".to_string(),
    };
    let token = match api.token.as_ref() {
        Some(t) if t.kind == TokenKind::Monotonic => {
            if token_read(ctx, e, &t.accessors) {
                "yes"
            } else {
                "no"
            }
        }
        _ => "not available from this API",
    }
    .to_string();
    let release = release_of(ctx, e);
    LockRow {
        path: ctx.src.path.clone(),
        line: e.span.start.line,
        column: e.span.start.column,
        backend: e.backend.clone(),
        api: api.id.clone(),
        wrapper: e.wrapper.clone(),
        key: e
            .key
            .as_ref()
            .map(|k| {
                k.literal
                    .clone()
                    .unwrap_or_else(|| crate::checks::key_display(&k.text))
            })
            .unwrap_or_default(),
        owner: e.owner.as_ref().map(|o| o.text.clone()),
        purpose,
        expiry,
        token,
        release,
        consensus: api.consensus,
        consensus_source: ctx.packs.pack(e.api).consensus_source.clone(),
        function: ctx.model.fns[e.func].qualified.clone(),
        fingerprint: String::new(),
    }
}

/// Whether the code reads the grant's token after the acquisition: an
/// accessor called on the grant in its statement or later in the same
/// function (`lease.token()`, `resp.header()`; see
/// [`crate::checks::token_use`]), or a token event (`role: token`) on the
/// binding.
fn token_read(ctx: &CheckCtx, e: &Event, accessors: &[String]) -> bool {
    if e.binding.is_empty() {
        return false;
    }
    let token_event = ctx.model.fn_events(e.func).any(|x| {
        x.role == Role::Token
            && x.span.start.offset > e.span.end.offset
            && e.binding.iter().any(|b| x.mentions.contains(b))
    });
    if token_event {
        return true;
    }
    crate::checks::token_use(ctx, e, accessors) == crate::checks::TokenUse::Read
}

fn release_of(ctx: &CheckCtx, e: &Event) -> String {
    let found = ctx
        .locks
        .release_for(ctx.model, e.id)
        .map(|r| &ctx.model.events[r]);
    match found {
        // The database ends it with the transaction; an unlock does nothing.
        _ if ctx.api(e).scope == Some(Scope::Transaction) => "at transaction end".to_string(),
        // A session lock's unlock only works on the connection that holds it.
        Some(r)
            if ctx.api(r).scope == Some(Scope::Session)
                && matches!(connection_of(ctx, r), Conn::Pool(_)) =>
        {
            "unowned (through a pool)".to_string()
        }
        Some(r) => match ctx.api(r).owner_checked {
            // Checked against a value every holder has: no check at all.
            Some(true) => match ctx.locks.constant_owner(ctx.model, ctx.packs, r) {
                Some(c) => format!("unowned (constant {})", c.value),
                None => "owner-checked".to_string(),
            },
            Some(false) => "unowned".to_string(),
            None => "unknown".to_string(),
        },
        // A guard that releases itself, checked by owner, when dropped.
        None if ctx.api(e).released_on_drop => "owner-checked (on drop)".to_string(),
        // A pack that describes no release (a lease row's `DELETE` is
        // spelled too many ways): nothing could have been found.
        None if !ctx
            .packs
            .pack(e.api)
            .apis
            .iter()
            .any(|a| a.role == Role::Release) =>
        {
            "not described by its pack".to_string()
        }
        None => "not found".to_string(),
    }
}

/// `inventory --format table`.
pub fn table(rows: &[LockRow], opts: &crate::report::Options) -> String {
    let mut t = crate::report::table_for(opts);
    t.set_header(vec![
        "location", "backend", "api", "key", "purpose", "expiry", "token", "release",
    ]);
    for r in rows {
        t.add_row(vec![
            format!("{}:{}", crate::escape::text(&r.path), r.line),
            crate::escape::text(&r.backend).into_owned(),
            match &r.wrapper {
                Some(w) => crate::escape::text(&format!("wrapper {w} → {}", r.api)).into_owned(),
                None => crate::escape::text(&r.api).into_owned(),
            },
            crate::escape::text(&r.key).into_owned(),
            r.purpose.clone(),
            crate::escape::text(&r.expiry).into_owned(),
            r.token.clone(),
            r.release.clone(),
        ]);
    }
    // A location is copied into an editor or a shell: never wrapped.
    if let Some(c) = t.column_mut(0) {
        c.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
    }
    let mut s = t.to_string();
    s.push('\n');
    s.push_str(&format!(
        "{} lock{}\n",
        rows.len(),
        crate::report::plural(rows.len())
    ));
    s
}

/// The locks as a GitHub-flavoured Markdown table, for a pull-request
/// comment or a job summary: every cell is plain text, escaped as the
/// findings' step summary escapes it ([`crate::report::github`]: no
/// markup, link, autolink or mention can come from the code), and at most
/// as many rows as that summary shows, the rest counted.
pub fn markdown(rows: &[LockRow]) -> String {
    use crate::report::github::{cell, SUMMARY_BYTES, SUMMARY_ROWS};
    let mut s = String::from(
        "| location | backend | api | key | purpose | expiry | token | release | consensus |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    let mut written = 0;
    for r in rows.iter().take(SUMMARY_ROWS) {
        if s.len() > SUMMARY_BYTES {
            break;
        }
        written += 1;
        let api = match &r.wrapper {
            Some(w) => format!("wrapper {w} → {}", r.api),
            None => r.api.clone(),
        };
        let consensus = match (&r.consensus_source, r.consensus) {
            (Some(src), c) => format!("{} ({src})", if c { "yes" } else { "no" }),
            (None, true) => "yes".to_string(),
            (None, false) => "no".to_string(),
        };
        s.push_str(&format!("| {}:{} |", cell(&r.path), r.line));
        let cells = [
            r.backend.clone(),
            api,
            r.key.clone(),
            r.purpose.clone(),
            r.expiry.clone(),
            r.token.clone(),
            r.release.clone(),
            consensus,
        ];
        for c in &cells {
            s.push(' ');
            if c.is_empty() {
                s.push_str("(none)");
            } else {
                s.push_str(&cell(c));
            }
            s.push_str(" |");
        }
        s.push('\n');
    }
    if rows.len() > written {
        s.push_str(&format!(
            "\n{} more locks are in `lockaudit inventory --format json`.\n",
            rows.len() - written
        ));
    }
    s.push_str(&format!(
        "\n{} lock{}\n",
        rows.len(),
        crate::report::plural(rows.len())
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_cells_cannot_break_the_table_or_add_markup() {
        let row = LockRow {
            path: "src/a|b.rs".into(),
            line: 7,
            column: 1,
            backend: "redis".into(),
            api: "redis.set-nx-px".into(),
            wrapper: Some("locks::take".into()),
            key: "lock:{id}|`x`\n[l](https://e.com) @team <img>".into(),
            owner: None,
            purpose: "correctness".into(),
            expiry: "PX 30_000".into(),
            token: "no".into(),
            release: "".into(),
            consensus: false,
            consensus_source: Some("lockaudit.yaml:3:5: one *node*".into()),
            function: "take".into(),
            fingerprint: String::new(),
        };
        let md = markdown(std::slice::from_ref(&row));
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines.len(), 5, "{md}");
        // Nine cells: no `|` of the code splits one.
        assert_eq!(lines[2].matches(" | ").count(), 8, "{md}");
        assert!(lines[2].starts_with(r"| src/a\|b.rs:7 |"), "{md}");
        for markup in ["[l]", "](", "https:", " @team", "<img", "`x`", "*node*"] {
            assert!(!lines[2].contains(markup), "{markup} in {md}");
        }
        assert!(lines[2].contains("(none)"), "{md}");
        assert_eq!(lines[4], "1 lock");
        // As many rows as the findings' summary, the rest counted.
        let many = vec![row; crate::report::github::SUMMARY_ROWS + 2];
        let md = markdown(&many);
        assert_eq!(
            md.lines().filter(|l| l.starts_with("| src/")).count(),
            crate::report::github::SUMMARY_ROWS
        );
        assert!(
            md.contains("\n2 more locks are in `lockaudit inventory --format json`.\n"),
            "{}",
            &md[md.len() - 200..]
        );
    }

    /// Long cells are cut and rows stop past a byte budget: a job summary
    /// stays far below GitHub's 1 MiB whatever the code holds.
    #[test]
    fn markdown_stays_small_whatever_the_keys() {
        let row = LockRow {
            path: "src/a.rs".into(),
            line: 1,
            column: 1,
            backend: "redis".into(),
            api: "redis.set-nx".into(),
            wrapper: None,
            key: format!("lock{}", ":".repeat(250_000)),
            owner: None,
            purpose: "missing".into(),
            expiry: "none".into(),
            token: "no".into(),
            release: "not found".into(),
            consensus: false,
            consensus_source: Some("x".repeat(3_000)),
            function: "take".into(),
            fingerprint: String::new(),
        };
        let md = markdown(&vec![row; 400]);
        assert!(md.len() < 300 * 1024, "{} bytes", md.len());
        assert!(
            md.contains("more locks are in"),
            "{}",
            &md[md.len() - 200..]
        );
        assert!(md.contains("…"));
    }

    #[test]
    fn the_location_column_is_never_wrapped() {
        let path = "services/billing/src/very/deep/module/path/locks/acquire.rs".to_string();
        let row = LockRow {
            path: path.clone(),
            line: 1234,
            column: 9,
            backend: "redis".into(),
            api: "redis.set-nx-px".into(),
            wrapper: None,
            key: "lock:billing:invoice:{id}".into(),
            owner: None,
            purpose: "missing".into(),
            expiry: "PX".into(),
            token: "not available from this API".into(),
            release: "not found".into(),
            consensus: false,
            consensus_source: None,
            function: "take".into(),
            fingerprint: String::new(),
        };
        let sources = std::collections::HashMap::new();
        let opts = crate::report::Options {
            color: false,
            width: 80,
            sources: &sources,
            quiet: false,
            tty: false,
            changed: None,
            root: None,
        };
        let out = table(&[row], &opts);
        assert!(out.contains(&format!("{path}:1234")), "{out}");
    }
}
