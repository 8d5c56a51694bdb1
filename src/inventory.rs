//! `lockaudit inventory`: one row per acquisition — where, backend, API,
//! key, purpose, expiry, token, release. The audit a team asks for first.

use serde::Serialize;

use crate::checks::CheckCtx;
use crate::model::{Event, ExpiryState};
use crate::pack::{Role, TokenKind};

#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct LockRow {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub backend: String,
    pub api: String,
    pub key: String,
    pub purpose: String,
    pub expiry: String,
    pub token: String,
    pub release: String,
}

pub fn rows(ctx: &CheckCtx) -> Vec<LockRow> {
    ctx.takes().map(|e| row(ctx, e)).collect()
}

fn row(ctx: &CheckCtx, e: &Event) -> LockRow {
    let api = ctx.api(e);
    let purpose = match ctx.lookup(e) {
        crate::directives::PurposeLookup::Found { purpose, .. } => purpose.as_str().to_string(),
        crate::directives::PurposeLookup::None => match ctx.default_purpose {
            Some(p) => format!("{} (default)", p.as_str()),
            None => "missing".to_string(),
        },
        _ => "malformed".to_string(),
    };
    let expiry = match &e.expiry {
        ExpiryState::Set(Some(v)) => v.clone(),
        ExpiryState::Set(None) => "set".to_string(),
        ExpiryState::Missing => "none".to_string(),
        ExpiryState::Server(_) => "server lease".to_string(),
        ExpiryState::Session => "session".to_string(),
        ExpiryState::Unknown => "unknown".to_string(),
    };
    let token = match api.token.as_ref().map(|t| t.kind) {
        Some(TokenKind::Monotonic) => {
            let used = !e.binding.is_empty()
                && ctx.model.fns[e.func].lets.iter().any(|l| {
                    l.offset > e.span.end.offset
                        && e.binding.iter().any(|b| l.mentions.contains(b))
                        && api.token.as_ref().is_some_and(|t| {
                            t.accessors.is_empty()
                                || t.accessors.iter().any(|a| l.init.contains(a.as_str()))
                        })
                });
            if used { "yes" } else { "no" }.to_string()
        }
        _ => "not available from this API".to_string(),
    };
    let release = release_of(ctx, e);
    LockRow {
        path: ctx.src.path.clone(),
        line: e.span.start.line,
        column: e.span.start.column,
        backend: e.backend.clone(),
        api: api.id.clone(),
        key: e
            .key
            .as_ref()
            .map(|k| k.literal.clone().unwrap_or_else(|| k.text.clone()))
            .unwrap_or_default(),
        purpose,
        expiry,
        token,
        release,
    }
}

fn release_of(ctx: &CheckCtx, e: &Event) -> String {
    let found = ctx.model.events.iter().find(|r| {
        matches!(r.role, Role::Release | Role::Delete)
            && (matches!((&r.key, &e.key), (Some(a), Some(b)) if a.norm == b.norm)
                || (r.func == e.func && e.binding.iter().any(|b| r.mentions.contains(b))))
    });
    match found {
        Some(r) => match ctx.api(r).owner_checked {
            Some(true) => "owner-checked".to_string(),
            Some(false) => "unowned".to_string(),
            None => "unknown".to_string(),
        },
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
            format!("{}:{}", r.path, r.line),
            r.backend.clone(),
            r.api.clone(),
            r.key.clone(),
            r.purpose.clone(),
            r.expiry.clone(),
            r.token.clone(),
            r.release.clone(),
        ]);
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
