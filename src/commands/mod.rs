//! Commands that live outside `app.rs`: `check --fix`, `annotate` and
//! `lsp`. Each uses the same preparation, engine and reporters as `check`.

pub mod annotate;
pub mod fix;
pub mod lsp;
pub mod test_pack;
