//! The built-in packs, embedded so that a bare `cargo install` works with no
//! files beside the binary.

pub const BUILTIN: &[(&str, &str)] = &[
    ("redis.yaml", include_str!("../../rules/redis.yaml")),
    ("redlock.yaml", include_str!("../../rules/redlock.yaml")),
    ("etcd.yaml", include_str!("../../rules/etcd.yaml")),
    ("postgres.yaml", include_str!("../../rules/postgres.yaml")),
    ("mysql.yaml", include_str!("../../rules/mysql.yaml")),
    ("dynamodb.yaml", include_str!("../../rules/dynamodb.yaml")),
    ("consul.yaml", include_str!("../../rules/consul.yaml")),
    ("zookeeper.yaml", include_str!("../../rules/zookeeper.yaml")),
    (
        "kubernetes.yaml",
        include_str!("../../rules/kubernetes.yaml"),
    ),
    ("sql-lease.yaml", include_str!("../../rules/sql-lease.yaml")),
    // Last: generic effect shapes that any backend's more specific entry
    // must be able to claim first.
    (
        "fenced-effects.yaml",
        include_str!("../../rules/fenced-effects.yaml"),
    ),
];

/// Markdown table of the built-in backends and whether their grants carry a
/// fencing token, for `explain`.
pub fn token_table() -> String {
    let set = super::PackSet::builtin();
    let mut s = String::from("\n## Backends lockaudit knows\n\n| backend | crates | consensus | acquisitions and their token |\n|---|---|---|---|\n");
    for p in &set.packs {
        let takes: Vec<String> = p
            .apis
            .iter()
            .filter(|a| matches!(a.role, super::Role::Acquire | super::Role::TryAcquire))
            .map(|a| {
                let t = match a.token.as_ref().map(|t| t.kind) {
                    Some(super::TokenKind::Monotonic) => "token",
                    Some(super::TokenKind::OwnerId) => "owner id only",
                    _ => "no token",
                };
                format!("`{}` ({t})", a.id)
            })
            .collect();
        if takes.is_empty() {
            continue;
        }
        s.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            p.backend,
            p.crates.join(", "),
            if p.consensus { "yes" } else { "no" },
            takes.join(", ")
        ));
    }
    s
}
