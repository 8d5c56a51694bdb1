//! What the code does with an acquisition's fencing token: read in the
//! grant's own chain (`.await?.header()`), kept in a binding that a later
//! statement asks for it, lost to a projection (`.key().to_vec()`), or
//! handed on whole. Read from the file's text after the grant, bounded per
//! grant; the checks and the inventory ask this, and scan nothing
//! themselves.

use super::{Event, FileModel};
use crate::pack::Api;
use crate::source::SourceFile;

/// What the code does with the fencing token of an acquisition's grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenUse {
    /// A token accessor is called on the grant (`lock.header()`).
    Read,
    /// Nothing can read it: the grant is not bound, or only a projection
    /// that drops the token is kept (`.key().to_vec()`), or the binding is
    /// only ever asked for other parts.
    Lost,
    /// The grant goes somewhere the check does not follow (a call, a
    /// return, a field): it may be read there.
    Unknown,
}

/// Most of a function read after a grant for its token's uses, in bytes.
const MAX_TOKEN_SCAN: usize = 64 * 1024;

/// Methods that hand on the reply itself: awaiting, error handling,
/// conversions.
const ADAPTERS: &[&str] = &[
    "await",
    "context",
    "with_context",
    "map_err",
    "unwrap",
    "expect",
    "ok_or",
    "ok_or_else",
    "into",
    "clone",
    "as_ref",
];

/// How the grant of `a` meets its token `accessors` (`header`, `revision`)
/// in the acquisition's own statement and the rest of its function.
pub fn token_use(
    src: &SourceFile,
    model: &FileModel,
    api: &Api,
    a: &Event,
    accessors: &[String],
) -> TokenUse {
    let text = &src.text;
    let is_accessor = |m: &str| accessors.iter().any(|x| x == m);
    // The rest of the acquisition's chain: `.await?.key().to_vec()`,
    // after the matched method's own arguments.
    let call_end = api
        .matcher
        .method
        .as_deref()
        .and_then(|m| {
            let from = a.span.start.offset;
            let chain = text.get(from..a.span.end.offset.max(a.chain_span.end.offset))?;
            let at = chain
                .match_indices(m)
                .map(|(i, _)| i + m.len())
                .find(|&i| chain[i..].trim_start().starts_with(['(', ':']))?;
            let after = skip_group(chain[at..].trim_start());
            Some(from + chain.len() - after.len())
        })
        .unwrap_or(a.span.end.offset);
    let rest = text.get(call_end..).unwrap_or("");
    let chain: Vec<&str> = methods_in(rest).collect();
    // A request built by a fluent builder and sent
    // (`update_item().key(..).send().await`): what comes before the
    // `.await` builds the request, what comes after reads the reply.
    let from = chain
        .iter()
        .position(|m| *m == "await")
        .filter(|&i| !chain[..i].iter().any(|m| is_accessor(m)))
        .unwrap_or(0);
    for &m in &chain[from..] {
        if is_accessor(m) {
            return TokenUse::Read;
        }
        if !ADAPTERS.contains(&m) && !accessors.is_empty() {
            // A projection: what is bound no longer holds the token.
            return TokenUse::Lost;
        }
    }
    if a.binding.is_empty() {
        // Handed back whole by its function: the caller has the token,
        // whether or not the crate calls that function.
        if a.handed_by.is_some() && !a.relayed {
            return TokenUse::Unknown;
        }
        return TokenUse::Lost;
    }
    let f = &model.fns[a.func];
    // The rest of the function, after the acquisition's statement.
    let start = a
        .span
        .end
        .offset
        .max(a.chain_span.end.offset)
        .min(text.len());
    let end = f.span.end.offset.clamp(start, text.len());
    // Each grant reads at most this much of its function: a hostile
    // function of thousands of grants costs each a bounded scan, and a
    // use beyond it is not ruled out.
    if end - start > MAX_TOKEN_SCAN {
        return TokenUse::Unknown;
    }
    let after = &text[start..end];
    let mut result = TokenUse::Lost;
    for b in &a.binding {
        for (at, _) in after.match_indices(b.as_str()) {
            let bytes = after.as_bytes();
            let before = after[..at].trim_end();
            let word_start = at == 0 || !crate::words::is_ident_byte(bytes[at - 1]);
            let word_end = after[at + b.len()..]
                .bytes()
                .next()
                .is_none_or(|c| !crate::words::is_ident_byte(c));
            if !word_start || !word_end || before.ends_with('.') {
                continue;
            }
            if before.ends_with("let") || before.ends_with("let mut") {
                break; // shadowed from here on
            }
            let next = after[at + b.len()..]
                .trim_start()
                .trim_start_matches('?')
                .trim_start();
            let method = next
                .starts_with('.')
                .then(|| methods_in(next).next())
                .flatten();
            match next.starts_with('.').then_some(method) {
                Some(Some(m)) if is_accessor(m) => return TokenUse::Read,
                Some(Some(m)) if !ADAPTERS.contains(&m) && !accessors.is_empty() => {}
                // A token without accessors is the grant itself.
                _ if accessors.is_empty() => return TokenUse::Read,
                _ => result = TokenUse::Unknown,
            }
        }
    }
    result
}

/// The names of the method calls and fields at the start of a chain's
/// text (`.await?.key().to_vec()` → `await`, `key`, `to_vec`), up to the
/// first thing that is neither.
fn methods_in(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix('?') {
            rest = r;
            continue;
        }
        // Comments between the links of a chain.
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.split_once('\n').map_or("", |(_, after)| after);
            continue;
        }
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, after)| after);
            continue;
        }
        let r = rest.strip_prefix('.')?.trim_start();
        let len = r
            .bytes()
            .take_while(|c| crate::words::is_ident_byte(*c))
            .count();
        if len == 0 {
            return None;
        }
        let (name, tail) = r.split_at(len);
        rest = skip_group(tail.trim_start());
        return Some(name);
    })
}

/// `text` after one balanced `(..)` at its start (with any turbofish before
/// it), or `text` itself.
fn skip_group(text: &str) -> &str {
    let t = match text.strip_prefix("::<") {
        Some(r) => match r.find('>') {
            Some(i) => r[i + 1..].trim_start(),
            None => return "",
        },
        None => text,
    };
    if !t.starts_with('(') {
        return t;
    }
    let mut depth = 0usize;
    for (i, c) in t.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return &t[i + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}
