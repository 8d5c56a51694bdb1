//! How the value of a lock call is used, judged by meaning: does the code
//! go on without knowing whether it holds the lock?
//!
//! Checked: `?`, `.unwrap()`/`.expect(..)` (a failure stops the code), an
//! `if`/`match` on the reply, `is_some()`/`is_ok()`, a fallback that means
//! "not acquired" (`unwrap_or(false)`, `unwrap_or_default()` on a success
//! flag, `unwrap_or_else(|e| { warn!(..); false })`), a bound or returned
//! value. Proceeds without the lock: `let _ =`, a statement whose value is
//! dropped, a fallback that means "acquired" (`unwrap_or(true)`), an error
//! turned into nothing and dropped (`.ok();`).

use syn::Expr;

use super::super::event::ResultUse;
use super::chain::{Anchor, Chain, SegKind};
use super::syntax::{is_negative, is_positive};
use crate::pack::ResultKind;

/// How the value of the expression being walked is used.
#[derive(Clone)]
pub(super) enum Use {
    /// `expr;`
    Stmt,
    /// `let _ = expr;` (`unit` when typed `()`).
    LetWild { unit: bool },
    /// `let names = expr;`
    Let { names: Vec<String>, unit: bool },
    /// `if expr`, `while expr`, a match scrutinee, `let PAT = expr else`;
    /// `names` are bound by a pattern (`if let Some(g) = expr`).
    Cond { names: Vec<String> },
    /// `if let Ok(..) = expr` or `if let Some(..) = expr` without an `else`.
    IfLetNoElse { names: Vec<String> },
    /// `if let Err(..) = expr { .. }` whose block only logs: the code
    /// carries on after a failure.
    ErrOnlyLogged,
    /// Anything else: an argument, a return value, an operand.
    Value,
}

enum Fallback {
    /// Means "acquired" (`true`, `Ok(())`).
    Positive,
    /// Means "not acquired", or a value the code goes on to judge.
    Handles,
    /// Hides a failed renewal.
    Swallows,
}

/// A short argument as written (`true`), else `..`.
fn short_text(arg: Option<&Expr>) -> String {
    let text = arg.map(super::super::keys::compact).unwrap_or_default();
    if text.is_empty() || text.chars().count() > 12 {
        "..".to_string()
    } else {
        text
    }
}

/// What the methods after the anchor do with the reply.
pub(super) fn result_use(
    chain: &Chain,
    anchor: Anchor,
    use_: &Use,
    kind: Option<ResultKind>,
    discard: &[String],
    acquire: bool,
) -> ResultUse {
    let flag = kind == Some(ResultKind::SuccessFlag);
    // For an acquisition, a fallback that means "not won" handles the
    // failure: the code goes on as one that does not hold the lock. A
    // renewal's failure must stop the work, so any fallback swallows it
    // unless the value is inspected.
    let judged = |arg: Option<&Expr>| -> Fallback {
        match arg {
            Some(a) if is_positive(a) => Fallback::Positive,
            Some(a) if acquire && is_negative(a) => Fallback::Handles,
            _ if acquire => Fallback::Handles,
            _ => Fallback::Swallows,
        }
    };
    let from = anchor.from();
    let tail = &chain.segs[from..];
    let mut propagated = false;
    let mut swallowed: Option<String> = None;
    for (i, s) in tail.iter().enumerate() {
        match &s.kind {
            SegKind::Method {
                name,
                unit_turbofish,
                args,
            } => {
                if i == 0 && anchor != Anchor::Root {
                    continue;
                }
                if *unit_turbofish {
                    return ResultUse::Discarded {
                        how: format!("`.{name}::<()>` throws the reply away"),
                        propagated: true,
                    };
                }
                if discard.iter().any(|d| d == name) {
                    return ResultUse::Discarded {
                        how: format!("`.{name}(..)` throws the reply away"),
                        propagated: true,
                    };
                }
                let arg: Option<&Expr> = args.first().copied();
                match name.as_str() {
                    // A panic on failure stops the code like `?` does.
                    "unwrap" | "expect" => propagated = true,
                    // The outcome is asserted (a test expecting the lock
                    // to be refused): it is read.
                    "expect_err" | "unwrap_err" => return ResultUse::Inspected,
                    // After a `?` (or a panic on failure) the failure is
                    // already handled: a later `.ok()` or default works on
                    // what the reply held (`.header().map(..).unwrap_or_default()`).
                    "ok" | "unwrap_or_default" if propagated && !flag => {}
                    "ok" => {
                        swallowed = Some("`.ok()` turns the error into `None`".into());
                    }
                    "unwrap_or_default" if flag && acquire => {
                        // A success flag's default is "not won".
                        swallowed = None;
                    }
                    "unwrap_or_default" => {
                        swallowed =
                            Some("`.unwrap_or_default()` turns a failure into a default".into())
                    }
                    "unwrap_or" | "unwrap_or_else" | "map_or" | "map_or_else" => {
                        match judged(arg) {
                            Fallback::Positive => {
                                swallowed = Some(format!(
                                    "`.{name}({})` treats a failure as success",
                                    short_text(arg)
                                ))
                            }
                            Fallback::Handles => swallowed = None,
                            Fallback::Swallows if swallowed.is_none() => {
                                swallowed = Some(format!(
                                    "`.{name}(..)` replaces a failure with a fallback"
                                ))
                            }
                            Fallback::Swallows => {}
                        }
                    }
                    "is_ok" | "is_err" | "is_some" | "is_none" => {
                        return match use_ {
                            Use::Stmt | Use::LetWild { .. } => ResultUse::Discarded {
                                how: format!("`.{name}()` is computed and dropped"),
                                propagated,
                            },
                            _ => ResultUse::Inspected,
                        };
                    }
                    _ => {}
                }
            }
            SegKind::Try => propagated = true,
            _ => {}
        }
    }
    let dropped = match use_ {
        Use::Stmt => Some(super::super::event::DROPPED_BY_STATEMENT.to_string()),
        Use::LetWild { unit: true } => Some("`let _: () =` throws the reply away".to_string()),
        Use::LetWild { unit: false } => Some("`let _ =` drops the result".to_string()),
        Use::Let { unit: true, .. } => Some("the reply is read as `()`".to_string()),
        // `let _lease = x.try_acquire_or_renew().await?;`: a name that says
        // it is not read, given whether the lock was won.
        Use::Let { names, .. }
            if flag && !names.is_empty() && names.iter().all(|n| n.starts_with('_')) =>
        {
            Some(format!(
                "`let {} =` binds whether it won and never reads it",
                names.join(", ")
            ))
        }
        _ => None,
    };
    if let Some(how) = swallowed {
        // `.ok()` into a condition or a binding is inspected there; dropped,
        // or a fallback that means "won", it is not.
        let positive = !how.starts_with("`.ok()`");
        if dropped.is_some() || positive {
            return ResultUse::Swallowed { how };
        }
    }
    if matches!(use_, Use::ErrOnlyLogged) {
        return ResultUse::Swallowed {
            how: "`if let Err(..)` only logs the failure and carries on".to_string(),
        };
    }
    if matches!(use_, Use::IfLetNoElse { .. }) {
        return ResultUse::IfLetNoElse;
    }
    match (dropped, propagated) {
        (Some(_), true) if matches!(use_, Use::Stmt) => ResultUse::Propagated,
        (Some(how), propagated) => ResultUse::Discarded { how, propagated },
        (None, _) => match use_ {
            Use::Let { .. } => ResultUse::Bound,
            _ => ResultUse::Inspected,
        },
    }
}
