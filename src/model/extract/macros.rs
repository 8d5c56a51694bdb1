//! Macros analysed as code: the arms of `select!` (`pat = future => body`),
//! and the bodies of `macro_rules!` definitions, where each `$name`
//! metavariable stands for an unknown expression and each `$( .. )*`
//! repetition is read once. (`join!`, `try_join!` and other macros whose
//! arguments are expressions are parsed by the file index as they are.)

use proc_macro2::{Delimiter, Group, Ident, TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};
use syn::visit::{self, Visit};
use syn::{Expr, Token};

/// The expressions of a `select!` body: every arm's future, precondition
/// and handler, in order.
pub(super) fn select_arms(tokens: &TokenStream) -> Option<Vec<Expr>> {
    let parser = |input: ParseStream| -> syn::Result<Vec<Expr>> {
        let mut out = Vec::new();
        if input.peek(syn::Ident) && input.fork().parse::<Ident>()? == "biased" {
            input.parse::<Ident>()?;
            input.parse::<Token![;]>()?;
        }
        while !input.is_empty() {
            if input.peek(Token![else]) {
                input.parse::<Token![else]>()?;
            } else {
                syn::Pat::parse_single(input)?;
                input.parse::<Token![=]>()?;
                out.push(Expr::parse_without_eager_brace(input)?);
                if input.peek(Token![,]) && input.peek2(Token![if]) {
                    input.parse::<Token![,]>()?;
                }
                if input.peek(Token![if]) {
                    input.parse::<Token![if]>()?;
                    out.push(Expr::parse_without_eager_brace(input)?);
                }
            }
            input.parse::<Token![=>]>()?;
            out.push(input.parse::<Expr>()?);
            if input.peek(Token![,]) {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(out)
    };
    parser.parse2(tokens.clone()).ok()
}

/// A `macro_rules!` definition's expansions, each read as a block.
pub(super) struct MacroRules {
    pub name: String,
    pub span: proc_macro2::Span,
    pub line: usize,
    pub bodies: Vec<syn::Block>,
}

/// Every `macro_rules!` of the file whose expansions read as statements.
pub(super) fn macro_rules(file: &syn::File) -> Vec<MacroRules> {
    struct V(Vec<MacroRules>);
    impl<'ast> Visit<'ast> for V {
        fn visit_item_macro(&mut self, i: &'ast syn::ItemMacro) {
            if let (true, Some(name)) = (i.mac.path.is_ident("macro_rules"), &i.ident) {
                let bodies: Vec<syn::Block> = transcribers(&i.mac.tokens)
                    .into_iter()
                    .filter_map(|t| {
                        let block = Group::new(Delimiter::Brace, substitute(&t));
                        syn::parse2::<syn::Block>(TokenTree::Group(block).into()).ok()
                    })
                    .collect();
                if !bodies.is_empty() {
                    self.0.push(MacroRules {
                        name: name.to_string(),
                        span: name.span(),
                        line: i.mac.path.segments[0].ident.span().start().line,
                        bodies,
                    });
                }
            }
            visit::visit_item_macro(self, i);
        }
    }
    let mut v = V(Vec::new());
    v.visit_file(file);
    v.0
}

/// The transcriber of each rule: `(matcher) => { transcriber };`.
fn transcribers(tokens: &TokenStream) -> Vec<TokenStream> {
    let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < tts.len() {
        let rule = match (&tts[i], tts.get(i + 1), tts.get(i + 2), tts.get(i + 3)) {
            (
                TokenTree::Group(_),
                Some(TokenTree::Punct(a)),
                Some(TokenTree::Punct(b)),
                Some(TokenTree::Group(t)),
            ) if a.as_char() == '=' && b.as_char() == '>' => Some(t.stream()),
            _ => None,
        };
        match rule {
            Some(t) => {
                out.push(t);
                i += 4;
            }
            None => i += 1,
        }
    }
    out
}

/// `$name` → an identifier standing for an unknown value; `$( .. ) sep *`
/// → its contents once; `$crate` → `crate`.
fn substitute(tokens: &TokenStream) -> TokenStream {
    let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let mut out = Vec::with_capacity(tts.len());
    let mut i = 0;
    while i < tts.len() {
        match (&tts[i], tts.get(i + 1)) {
            (TokenTree::Punct(p), Some(TokenTree::Ident(id))) if p.as_char() == '$' => {
                let name = if id == "crate" {
                    "crate".to_string()
                } else {
                    format!("__macro_{id}")
                };
                out.push(TokenTree::Ident(Ident::new(&name, id.span())));
                i += 2;
            }
            (TokenTree::Punct(p), Some(TokenTree::Group(g))) if p.as_char() == '$' => {
                out.extend(substitute(&g.stream()));
                i += 2;
                // An optional separator, then the repetition operator.
                for _ in 0..2 {
                    if let Some(TokenTree::Punct(q)) = tts.get(i) {
                        if matches!(q.as_char(), '*' | '+' | '?') {
                            i += 1;
                            break;
                        }
                        if q.as_char() != '$' {
                            i += 1;
                            continue;
                        }
                    }
                    break;
                }
            }
            (TokenTree::Group(g), _) => {
                let mut ng = Group::new(g.delimiter(), substitute(&g.stream()));
                ng.set_span(g.span());
                out.push(TokenTree::Group(ng));
                i += 1;
            }
            (t, _) => {
                out.push(t.clone());
                i += 1;
            }
        }
    }
    out.into_iter().collect()
}
