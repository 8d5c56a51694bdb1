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
pub fn compact(tokens: &impl ToTokens) -> String {
    let mut s = tokens.to_token_stream().to_string();
    s.retain(|c| !c.is_whitespace());
    s
}

pub fn normalise(e: &Expr) -> String {
    compact(strip(e))
}

/// The literal text of a key: a string literal, or the format string of a
/// `format!` call.
pub fn literal(e: &Expr) -> Option<String> {
    match strip(e) {
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
        let f: Expr = syn::parse_str("&format!(\"lock:{}\", id)").unwrap();
        assert_eq!(literal(&f).as_deref(), Some("lock:{}"));
    }
}
