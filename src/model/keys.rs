//! Normalising key expressions so that `&key`, `key.clone()` and
//! `key.as_str()` compare equal, and pulling literal text out of keys.

use quote::ToTokens;
use syn::Expr;

/// Methods that do not change which key an expression names.
const TRANSPARENT: &[&str] = &[
    "clone",
    "as_str",
    "to_string",
    "to_owned",
    "as_ref",
    "as_bytes",
    "into",
    "borrow",
    "as_slice",
    "to_vec",
];

pub fn strip(mut e: &Expr) -> &Expr {
    loop {
        e = match e {
            Expr::Reference(r) => &r.expr,
            Expr::Paren(p) => &p.expr,
            Expr::Group(g) => &g.expr,
            // `project_id as DBProjectId`: a cast names the same value.
            Expr::Cast(c) => &c.expr,
            Expr::MethodCall(m)
                if m.args.is_empty() && TRANSPARENT.iter().any(|t| m.method == t) =>
            {
                &m.receiver
            }
            _ => return e,
        }
    }
}

/// Token text without whitespace.
/// Whether a key built by `e` (a `format!`, a call, a concatenation; not a
/// plain literal) embeds a lease id: `lease.id()`, `lease_id`,
/// `self.lease_id`, or `{lease_id}` captured by the format string.
pub fn embeds_lease_id(e: &Expr) -> bool {
    static LEASE_ID: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)(^|[^A-Za-z0-9_])(lease_?id\b|lease\.id\(\))").expect("valid regex")
    });
    let e = strip(e);
    !matches!(e, Expr::Lit(_) | Expr::Path(_)) && LEASE_ID.is_match(&compact(e))
}

pub fn compact(tokens: &impl ToTokens) -> String {
    let mut s = tokens.to_token_stream().to_string();
    s.retain(|c| !c.is_whitespace());
    s
}

/// Method calls of a chain kept in full by [`compact_receiver`]; earlier
/// ones are elided.
const RECEIVER_SEGMENTS: usize = 8;

/// The text of a receiver, with a long method chain shortened to its root
/// and its last few calls: `redis::pipe()….arg("v").ignore()`. A view of
/// each call of a 4,000-call pipeline would otherwise print the whole
/// chain before it, which is quadratic in the chain.
///
/// `root` is where the chain starts (what is shown before the `…`): the
/// chain is never walked further down than its last few calls, so each
/// call's receiver costs the same however long the chain is.
pub fn compact_receiver(e: &Expr, root: &Expr) -> String {
    let mut segments = Vec::new();
    let mut cur = e;
    while let Expr::MethodCall(m) = cur {
        if segments.len() == RECEIVER_SEGMENTS {
            break;
        }
        segments.push(m);
        cur = &m.receiver;
    }
    if !matches!(cur, Expr::MethodCall(_)) {
        return compact(e);
    }
    let mut text = compact(root);
    text.push('…');
    for m in segments.iter().rev() {
        text.push('.');
        text.push_str(&m.method.to_string());
        if let Some(t) = &m.turbofish {
            text.push_str(&compact(t));
        }
        text.push('(');
        for (i, a) in m.args.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&compact(a));
        }
        text.push(')');
    }
    text
}

pub fn normalise(e: &Expr) -> String {
    compact(strip(e))
}

/// The text of `concat!("D", "EL")`: literals only (strings, characters,
/// integers, booleans), as the compiler joins them.
pub fn concat_text(m: &syn::Macro) -> Option<String> {
    if !m.path.is_ident("concat") {
        return None;
    }
    let parts = m
        .parse_body_with(syn::punctuated::Punctuated::<syn::Lit, syn::Token![,]>::parse_terminated)
        .ok()?;
    let mut text = String::new();
    for p in &parts {
        match p {
            syn::Lit::Str(s) => text.push_str(&s.value()),
            syn::Lit::Char(c) => text.push(c.value()),
            syn::Lit::Int(i) => text.push_str(i.base10_digits()),
            syn::Lit::Bool(b) => text.push_str(if b.value { "true" } else { "false" }),
            _ => return None,
        }
    }
    Some(text)
}

/// The value of an expression that is the same on every run: a string,
/// number, boolean or character literal, a `concat!` of literals, a
/// `format!` without placeholders, or `String::from` / `to_string` of one.
pub fn constant(e: &Expr) -> Option<String> {
    match strip(e) {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Str(s) => Some(format!("{:?}", s.value())),
            syn::Lit::ByteStr(b) => Some(format!("{:?}", String::from_utf8_lossy(&b.value()))),
            syn::Lit::Int(i) => Some(i.base10_digits().to_string()),
            syn::Lit::Float(f) => Some(f.base10_digits().to_string()),
            syn::Lit::Bool(b) => Some(b.value.to_string()),
            syn::Lit::Char(c) => Some(format!("{:?}", c.value())),
            _ => None,
        },
        Expr::Macro(m) if m.mac.path.is_ident("concat") => {
            concat_text(&m.mac).map(|t| format!("{t:?}"))
        }
        Expr::Macro(m) if m.mac.path.is_ident("format") => {
            let mut args = m
                .mac
                .parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                )
                .ok()?
                .into_iter();
            let text = match args.next()? {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => s.value(),
                _ => return None,
            };
            let placeholders = text.replace("{{", "").contains('{');
            (args.next().is_none() && !placeholders)
                .then(|| format!("{:?}", text.replace("{{", "{").replace("}}", "}")))
        }
        Expr::Call(c) if c.args.len() == 1 => match &*c.func {
            Expr::Path(p)
                if p.path.segments.len() == 2
                    && p.path.segments[1].ident == "from"
                    && matches!(
                        p.path.segments[0].ident.to_string().as_str(),
                        "String" | "Bytes" | "Vec"
                    ) =>
            {
                constant(&c.args[0])
            }
            _ => None,
        },
        _ => None,
    }
}

/// The literal text of a key: a string literal, the format string of a
/// `format!` call, or a `concat!` of literals.
pub fn literal(e: &Expr) -> Option<String> {
    match strip(e) {
        Expr::Macro(m) if m.mac.path.is_ident("concat") => concat_text(&m.mac),
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Str(s) => Some(s.value()),
            syn::Lit::ByteStr(b) => Some(String::from_utf8_lossy(&b.value()).into_owned()),
            _ => None,
        },
        Expr::Macro(m) if m.mac.path.is_ident("format") => {
            let lit: syn::LitStr = m
                .mac
                .parse_body_with(|input: syn::parse::ParseStream| {
                    let l: syn::LitStr = input.parse()?;
                    let _: proc_macro2::TokenStream = input.parse()?;
                    Ok(l)
                })
                .ok()?;
            Some(lit.value())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripping_keeps_the_key() {
        let a: Expr = syn::parse_str("&key.clone().as_str()").unwrap();
        let b: Expr = syn::parse_str("key.to_string()").unwrap();
        assert_eq!(normalise(&a), normalise(&b));
    }

    #[test]
    fn concat_of_literals_is_text() {
        let e: syn::Expr = syn::parse_str(r#"concat!("D", "EL", '-', 1, true)"#).unwrap();
        assert_eq!(super::literal(&e).as_deref(), Some("DEL-1true"));
        let e: syn::Expr = syn::parse_str(r#"concat!("lock:", env!("X"))"#).unwrap();
        assert_eq!(super::literal(&e), None, "a macro inside is not a literal");
    }

    #[test]
    fn constants_are_values_the_same_on_every_run() {
        let constant = |src: &str| super::constant(&syn::parse_str::<Expr>(src).unwrap());
        assert_eq!(constant(r#""1""#).as_deref(), Some(r#""1""#));
        assert_eq!(constant("&true").as_deref(), Some("true"));
        assert_eq!(constant("42").as_deref(), Some("42"));
        assert_eq!(
            constant(r#"String::from("me")"#).as_deref(),
            Some(r#""me""#)
        );
        assert_eq!(constant(r#""me".to_string()"#).as_deref(), Some(r#""me""#));
        assert_eq!(
            constant(r#"format!("worker")"#).as_deref(),
            Some(r#""worker""#)
        );
        assert_eq!(constant(r#"format!("{{a}}")"#).as_deref(), Some(r#""{a}""#));
        assert_eq!(constant(r#"format!("{}-{}", host, pid)"#), None);
        assert_eq!(constant(r#"format!("{host}")"#), None);
        assert_eq!(constant("token"), None);
        assert_eq!(constant("Uuid::new_v4().to_string()"), None);
    }

    #[test]
    fn long_receiver_chains_keep_root_and_tail() {
        let short: syn::Expr = syn::parse_str("redis::pipe().cmd(\"SET\").arg(k)").unwrap();
        assert_eq!(
            super::compact_receiver(&short, &short),
            super::compact(&short),
            "a short chain is printed whole"
        );
        let calls: String = (0..20).map(|i| format!(".arg({i})")).collect();
        let long: syn::Expr =
            syn::parse_str(&format!("redis::pipe(){calls}.ignore::<u8>()")).unwrap();
        let root: syn::Expr = syn::parse_str("redis::pipe()").unwrap();
        let text = super::compact_receiver(&long, &root);
        assert!(text.starts_with("redis::pipe()…"), "{text}");
        assert!(
            text.ends_with(
                ".arg(13).arg(14).arg(15).arg(16).arg(17).arg(18).arg(19).ignore::<u8>()"
            ),
            "{text}"
        );
        assert!(!text.contains(".arg(12)"), "{text}");
        let f: Expr = syn::parse_str("&format!(\"lock:{}\", id)").unwrap();
        assert_eq!(literal(&f).as_deref(), Some("lock:{}"));
    }
}
