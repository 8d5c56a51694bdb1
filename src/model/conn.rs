//! The connection a SQL lock runs on (a pool, a transaction, one pinned
//! connection), read from the executor the call is given and its declared
//! type. The checks (`pooled-session-lock`, the fencing of a
//! transaction-scoped lock) and the inventory ask this.

use regex::Regex;

use super::{Event, FileModel};
use crate::source::SourceFile;

/// The connection a session- or transaction-scoped SQL lock runs on, as the
/// code shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conn {
    /// A connection pool (`&pool`, `&self.pool`, a `PgPool`): each statement
    /// may go to another connection.
    Pool(String),
    /// A transaction (`&mut *tx`, a `Transaction`): one connection until
    /// commit or rollback.
    Transaction(String),
    /// One pinned connection (`&mut *conn`, a `PoolConnection`, a client).
    Pinned(String),
    /// Not visible, or built inline (`&mut *pool.acquire().await?`).
    Unknown,
}

impl Conn {
    /// The variable the connection is held in: `tx` for `&mut *tx`,
    /// `pool` for `&self.pool`.
    pub fn var(&self) -> Option<&str> {
        let (Conn::Pool(t) | Conn::Transaction(t) | Conn::Pinned(t)) = self else {
            return None;
        };
        let t = t.trim_start_matches(['&', '*', '(']);
        let t = t
            .strip_prefix("mut")
            .unwrap_or(t)
            .trim_start_matches(['*', '(']);
        t.split(['.', ')']).rfind(|s| !s.is_empty() && *s != "self")
    }
}

/// Methods that run a SQL statement on an executor, in sqlx, diesel,
/// tokio-postgres, postgres, mysql and mysql_async.
const EXEC_METHODS: &[&str] = &[
    "execute",
    "execute_many",
    "execute_unprepared",
    "fetch",
    "fetch_one",
    "fetch_optional",
    "fetch_all",
    "fetch_many",
    "get_result",
    "get_results",
    "load",
    "first",
    "query",
    "query_one",
    "query_opt",
    "query_raw",
    "query_first",
    "query_drop",
    "query_iter",
    "query_all",
    "exec",
    "exec_drop",
    "exec_first",
    "exec_iter",
    "batch_execute",
    "simple_query",
];

/// The connection of a SQL lock call: the executor argument of
/// `.execute(&pool)` / `.fetch_one(&mut *conn)`, or the receiver of
/// `pool.execute("SELECT …")` / `client.query_one("SELECT …", ..)`,
/// classified by its declared type (when the function or a struct of the
/// file declares one) and else by its name.
pub fn connection_of(src: &SourceFile, model: &FileModel, e: &Event) -> Conn {
    match &e.executor {
        Some(x) => classify_conn(src, model, e, x),
        None => Conn::Unknown,
    }
}

/// The executor of the statement the chain `top` runs (its text in `text`
/// ends at `end`): the innermost statement-running method's, else that of
/// a method after the call in the same statement (a Rust function of the
/// query DSL, `diesel::select(pg_advisory_lock(id))`, sits inside it).
pub(crate) fn executor(text: &str, top: &syn::Expr, end: usize) -> Option<String> {
    executor_of(top).or_else(|| executor_after(text, end))
}

fn strip_expr(mut x: &syn::Expr) -> &syn::Expr {
    loop {
        x = match x {
            syn::Expr::Await(a) => &a.base,
            syn::Expr::Try(t) => &t.expr,
            syn::Expr::Paren(p) => &p.expr,
            syn::Expr::Group(g) => &g.expr,
            _ => return x,
        }
    }
}

/// The executor of the innermost statement-running method of a chain.
fn executor_of(x: &syn::Expr) -> Option<String> {
    let syn::Expr::MethodCall(m) = strip_expr(x) else {
        return None;
    };
    if let Some(found) = executor_of(&m.receiver) {
        return Some(found);
    }
    if !EXEC_METHODS.iter().any(|n| m.method == n) {
        return None;
    }
    let carries_sql = |a: &syn::Expr| {
        let t = crate::model::keys::compact(a);
        t.contains('"')
            || t.contains("query")
            || t.split("::").last().is_some_and(|s| {
                s.len() > 1
                    && s.chars()
                        .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
            })
    };
    if m.args.iter().any(carries_sql) {
        Some(crate::model::keys::compact(&*m.receiver))
    } else {
        m.args.first().map(crate::model::keys::compact)
    }
}

/// `.get_result(conn)`, `.execute(conn)` … after `offset`, in the same
/// statement.
fn executor_after(text: &str, offset: usize) -> Option<String> {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^\s*\.\s*(?:get_result|get_results|execute|first|load)\s*(?:::\s*<[^()]*>)?\s*\(([^()]*)\)")
            .expect("valid regex")
    });
    let rest = text.get(offset..)?;
    // Close the brackets the call sits in, then look at the next method.
    let mut depth = 0i32;
    for (i, c) in rest.char_indices().take(400) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth < 0 {
                    let after = &rest[i + 1..];
                    if let Some(c) = re.captures(after) {
                        let mut s = c[1].to_string();
                        s.retain(|c| !c.is_whitespace());
                        return Some(s);
                    }
                    depth = 0;
                }
            }
            ';' => return None,
            _ => {}
        }
    }
    None
}

fn classify_conn(src: &SourceFile, model: &FileModel, e: &Event, executor: &str) -> Conn {
    let mut t = executor;
    let mut deref = false;
    loop {
        let before = t;
        t = t.trim_start_matches('&');
        t = t
            .strip_prefix("mut")
            .filter(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
            .unwrap_or(t);
        if let Some(r) = t.strip_prefix('*') {
            deref = true;
            t = r;
        }
        for m in [
            ".as_ref()",
            ".as_mut()",
            ".clone()",
            ".deref()",
            ".deref_mut()",
            ".borrow()",
            ".borrow_mut()",
        ] {
            if let Some(r) = t.strip_suffix(m) {
                t = r;
            }
        }
        if let Some(r) = t.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
            t = r;
        }
        if t == before {
            break;
        }
    }
    // A connection checked out of a pool for this one statement
    // (`&mut *pool.acquire().await?`): it goes back to the pool when the
    // statement ends, holding whatever session lock it took.
    if let Some(pool) = inline_checkout(t) {
        let pooled = declared_type(src, model, e, pool)
            .and_then(|ty| classify_type(&ty, ""))
            .map(|c| matches!(c, Conn::Pool(_)))
            .unwrap_or_else(|| {
                let name = pool.rsplit('.').next().unwrap_or(pool);
                crate::model::lockname::mentions_word(name, "pool")
            });
        return if pooled {
            Conn::Pool(executor.to_string())
        } else {
            Conn::Unknown
        };
    }
    // Any other expression: nothing to say.
    if t.is_empty()
        || !t
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    {
        return Conn::Unknown;
    }
    let name = t.rsplit('.').next().unwrap_or(t);
    let shown = executor.to_string();
    if let Some(ty) = declared_type(src, model, e, t) {
        if let Some(c) = classify_type(&ty, &shown) {
            return c;
        }
    }
    let has = |ws: &[&str]| {
        ws.iter()
            .any(|w| crate::model::lockname::mentions_word(name, w))
    };
    // A dereferenced guard (`&mut *conn`) is one connection, but `&*pool`
    // (an `Arc<PgPool>`) is still the pool.
    if has(&["tx", "txn", "trx", "transaction", "xact"]) {
        Conn::Transaction(shown)
    } else if has(&["conn", "connection", "client", "session"]) {
        Conn::Pinned(shown)
    } else if has(&["pool", "pools"]) {
        Conn::Pool(shown)
    } else if deref {
        Conn::Pinned(shown)
    } else {
        Conn::Unknown
    }
}

/// `pool` of `pool.acquire().await?`, `self.pool.get().await.unwrap()`,
/// `pool.get_conn().await?`.
fn inline_checkout(t: &str) -> Option<&str> {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^([A-Za-z_][\w.]*)\.(?:acquire|get|get_conn|get_connection|get_owned)\(\)(?:\.await)?(?:\?|\.unwrap\(\)|\.expect\([^()]*\))?$")
            .expect("valid regex")
    });
    re.captures(t).and_then(|c| c.get(1)).map(|m| m.as_str())
}

fn classify_type(ty: &str, shown: &str) -> Option<Conn> {
    // The outer type decides (`Pool<ConnectionManager<PgConnection>>` is a
    // pool); smart pointers and extractors are looked through.
    let mut t = ty.trim();
    loop {
        t = t.trim_start_matches('&').trim_start();
        t = t.strip_prefix("mut ").unwrap_or(t).trim_start();
        let (head, inner) = match t.find('<') {
            Some(i) => (&t[..i], t[i + 1..].strip_suffix('>').unwrap_or(&t[i + 1..])),
            None => (t, ""),
        };
        let name = head.rsplit("::").next().unwrap_or(head).trim();
        match name {
            "Arc" | "Rc" | "Box" | "State" | "Extension" | "Data" | "Cow" if !inner.is_empty() => {
                t = inner;
                continue;
            }
            _ => {}
        }
        let c = if name == "Transaction" || name.ends_with("Transaction") {
            Conn::Transaction(shown.to_string())
        } else if name.ends_with("Pool") {
            Conn::Pool(shown.to_string())
        } else if name.ends_with("Connection")
            || name.ends_with("Conn")
            || name == "Client"
            || name == "Object"
        {
            Conn::Pinned(shown.to_string())
        } else {
            return None;
        };
        return Some(c);
    }
}

/// The declared type of `path` (`pool`, `self.db`, `state.pool`) as written
/// in the source: a parameter or `let` of the enclosing function, else a
/// struct field of the file. A stand-in read from the text until the model
/// carries declared types.
fn declared_type(src: &SourceFile, model: &FileModel, e: &Event, path: &str) -> Option<String> {
    let name = path.rsplit('.').next()?;
    let f = &model.fns[e.func];
    let text = &src.text;
    let in_fn = text.get(f.span.start.offset..f.span.end.offset.min(text.len()))?;
    let scan = |hay: &str| type_after(hay, name);
    if path.contains('.') {
        // A field: the struct definitions of the file.
        scan(text)
    } else {
        scan(in_fn)
    }
}

/// The type declared for `name` in `hay`: after the first `name:` or
/// `(name):` that is not part of a path or field access (`x.name:`,
/// `x::name:`) or a path itself (`name::`).
fn type_after(hay: &str, name: &str) -> Option<String> {
    if name.is_empty() {
        return None;
    }
    for (at, _) in hay.match_indices(name) {
        let before = hay[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | ':')) {
            continue;
        }
        let rest = hay[at + name.len()..].trim_start();
        let rest = rest.strip_prefix(')').unwrap_or(rest).trim_start();
        let Some(rest) = rest.strip_prefix(':').filter(|r| !r.starts_with(':')) else {
            continue;
        };
        let ty = type_text(rest);
        if !ty.is_empty() {
            return Some(ty);
        }
    }
    None
}

/// The type text at the start of `s`, up to a `,`, `)`, `=`, `;`, `{` or line
/// end outside angle brackets.
fn type_text(s: &str) -> String {
    let mut depth = 0i32;
    let mut out = String::new();
    for c in s.chars().take(200) {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ']' => depth -= 1,
            ')' if depth > 0 => depth -= 1,
            ',' | ')' | '=' | ';' | '{' | '\n' if depth <= 0 => break,
            _ => {}
        }
        out.push(c);
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::type_after;

    #[test]
    fn a_declared_type_is_read_after_its_name() {
        let cases = [
            ("fn f(pool: &PgPool, n: u8)", "pool", Some("&PgPool")),
            (
                "let (conn): PoolConnection<Postgres> = x;",
                "conn",
                Some("PoolConnection<Postgres>"),
            ),
            (
                "struct S { db: sqlx::Pool<MySql>, }",
                "db",
                Some("sqlx::Pool<MySql>"),
            ),
            // A longer name, a field access, a path: not a declaration.
            ("fn f(pool_size: u32)", "pool", None),
            ("self.pool: x", "pool", None),
            ("pool::connect()", "pool", None),
            // A character of several bytes right after the colon.
            ("let pool:é = 1;", "pool", Some("é")),
            ("", "pool", None),
        ];
        for (hay, name, want) in cases {
            assert_eq!(type_after(hay, name).as_deref(), want, "{hay}");
        }
    }
}
