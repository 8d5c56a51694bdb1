//! `RawPack` → [`Pack`]: validation. Every problem in a pack is collected and
//! reported together, each at its own line and column.

use super::field_name;
use super::raw::{RawApi, RawExpiry, RawHelp, RawKey, RawMatch, RawPack};
use super::{Api, Evidence, Expiry, ExpirySource, KeySpec, Matcher, Pack, Pattern, Role, Token};
use crate::diag::{Collector, YamlErrors};
use crate::yamlloc::Seg;

const SCHEMA_HINT: &str =
    "every field a pack accepts is documented on the \"Writing a rule pack\" page of the lockaudit book (docs/src/writing-packs.md) and in rules/schema.json (a JSON Schema)";

pub(super) fn compile(path: &str, text: &str, builtin: bool) -> Result<Pack, YamlErrors> {
    let mut c = Collector::new(path, text);
    if !builtin {
        if let Some((loc, msg)) = crate::yamlloc::find_expensive(text) {
            c.at_loc(loc, msg, None);
            return Err(c.finish("rule pack").unwrap_err());
        }
    }
    let raw: RawPack = match yaml_serde::from_str(text) {
        Ok(raw) => raw,
        Err(e) => {
            c.serde(&e, Some(SCHEMA_HINT.to_string()));
            recover(&mut c, text, &e);
            return Err(c.finish("rule pack").unwrap_err());
        }
    };
    if raw.backend.trim().is_empty() {
        c.at(
            &["backend".into()],
            "`backend` is empty",
            Some("name the backend, e.g. `redis`".into()),
        );
    }
    check_help_keys(&mut c, &[], &raw.help);
    let mut apis = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (i, api) in raw.apis.iter().enumerate() {
        let at = |f: &str| vec![Seg::from("apis"), Seg::Index(i), Seg::from(f)];
        if let Some(prev) = seen.insert(api.id.clone(), i) {
            c.at(
                &at("id"),
                format!("duplicate api id `{}` (also entry {})", api.id, prev + 1),
                Some("ids must be unique within a pack".into()),
            );
        }
        if let Some(api) = compile_api(&mut c, &raw, i, api, builtin) {
            apis.push(api);
        }
    }
    let text_only = raw.apis.iter().any(|a| {
        let m = &a.matcher;
        m.method.is_none()
            && m.function.is_none()
            && m.macro_name.is_none()
            && m.command.is_none()
            && !m.text.is_empty()
    });
    if text_only && raw.trigger_words.is_empty() {
        c.at(
            &["apis".into()],
            "an api is matched by its text alone, but the pack has no `trigger-words`",
            Some("list in `trigger-words` the words any matching text must contain (e.g. `pg_advisory`), so the pre-filter never skips a file that could match".into()),
        );
    }
    c.finish("rule pack")?;
    Ok(Pack {
        backend: raw.backend,
        description: raw.description,
        source: path.to_string(),
        builtin,
        crates: raw.crates,
        consensus: raw.consensus,
        consensus_note: raw.consensus_note,
        consensus_source: None,
        trigger_words: raw.trigger_words,
        builder_methods: raw.builder_methods,
        traits: raw.traits,
        help: raw.help,
        apis,
    })
}

/// After the pack failed to deserialise at `first`: deserialises every api
/// entry on its own and validates those that read fine, so that all the
/// pack's problems are reported together.
fn recover(c: &mut Collector, text: &str, first: &yaml_serde::Error) {
    let first_at = first.location().map(|l| l.index());
    let placeholder = RawPack {
        backend: String::new(),
        description: String::new(),
        crates: Vec::new(),
        consensus: false,
        consensus_note: None,
        trigger_words: Vec::new(),
        discard_methods: Vec::new(),
        builder_methods: Vec::new(),
        traits: Vec::new(),
        help: Default::default(),
        apis: Vec::new(),
    };
    let mut seen = std::collections::HashMap::new();
    for i in 0..super::recover::api_count(text) {
        let path = [Seg::from("apis"), Seg::Index(i)];
        match super::recover::at_path::<RawApi>(text, &path) {
            Ok(Some(api)) => {
                if let Some(prev) = seen.insert(api.id.clone(), i) {
                    c.at(
                        &[Seg::from("apis"), Seg::Index(i), Seg::from("id")],
                        format!("duplicate api id `{}` (also entry {})", api.id, prev + 1),
                        Some("ids must be unique within a pack".into()),
                    );
                }
                compile_api(c, &placeholder, i, &api, false);
            }
            Ok(None) => {}
            // The whole-pack error already points here.
            Err(e) if e.location().map(|l| l.index()) == first_at => {}
            Err(e) => c.serde(&e, Some(SCHEMA_HINT.to_string())),
        }
    }
}

fn compile_api(
    c: &mut Collector,
    pack: &RawPack,
    i: usize,
    raw: &RawApi,
    builtin: bool,
) -> Option<Api> {
    let base = vec![Seg::from("apis"), Seg::Index(i)];
    let at = |rest: &[Seg]| {
        let mut p = base.clone();
        p.extend_from_slice(rest);
        p
    };
    let before = c.count();
    if raw.id.trim().is_empty() {
        c.at(&at(&["id".into()]), "`id` is empty", None);
    }
    let matcher = compile_match(c, &at(&["match".into()]), &raw.matcher, builtin);
    let key = compile_keys(c, &at(&["key".into()]), &raw.key);
    let owner = compile_keys(c, &at(&["owner".into()]), &raw.owner);
    let expiry = raw
        .expiry
        .as_ref()
        .and_then(|e| compile_expiry(c, &at(&["expiry".into()]), e, builtin));
    let takes = matches!(raw.role, Role::Acquire | Role::TryAcquire);
    if raw.token.is_some() && !takes {
        c.at(
            &at(&["token".into()]),
            "`token` is only meaningful on an acquire or try-acquire api",
            Some("move it to the api that grants the lock".into()),
        );
    }
    if raw.expiry.is_some() && !(takes || raw.role == Role::Renew) {
        c.at(
            &at(&["expiry".into()]),
            "`expiry` is only meaningful on an acquire, try-acquire or renew api",
            None,
        );
    }
    if raw.renews && !takes {
        c.at(
            &at(&["renews".into()]),
            "`renews` is only meaningful on an acquire or try-acquire api (a `renew` api renews already)",
            None,
        );
    }
    if c.count() > before {
        return None;
    }
    let (help, help_by_check) = match &raw.help {
        None => (None, Default::default()),
        Some(RawHelp::All(t)) => (Some(t.clone()), Default::default()),
        Some(RawHelp::PerCheck(m)) => {
            check_help_keys(c, &base, m);
            (None, m.clone())
        }
    };
    if c.count() > before {
        return None;
    }
    let mut discard = raw.discard_methods.clone();
    discard.extend(pack.discard_methods.iter().cloned());
    Some(Api {
        id: raw.id.clone(),
        library: raw.library.clone(),
        role: raw.role,
        matcher: matcher?,
        key,
        owner,
        atomic: raw.atomic,
        owner_checked: raw.owner_checked,
        expiry,
        token: raw.token.as_ref().map(|t| Token {
            kind: t.kind,
            accessors: t.accessors.clone(),
            note: t.note.clone(),
        }),
        result: raw.result,
        discard_methods: discard,
        needs_lock_name: raw.needs_lock_name,
        consensus: raw.consensus.unwrap_or(pack.consensus),
        scope: raw.scope,
        released_on_drop: raw.released_on_drop,
        renews: raw.renews,
        returns_owned_key: raw.returns_owned_key,
        flaw: raw.flaw.clone(),
        help,
        help_by_check,
    })
}

/// Every key of a `help:` map must be a check id.
fn check_help_keys(
    c: &mut Collector,
    at: &[Seg],
    help: &std::collections::BTreeMap<String, String>,
) {
    for key in help.keys() {
        if crate::vocab::CheckId::parse(key).is_none() {
            let mut p = at.to_vec();
            p.push(Seg::from("help"));
            p.push(Seg::from(key.as_str()));
            c.at(
                &p,
                format!("`{key}` is not a check id"),
                Some("`lockaudit rules` lists the check ids".into()),
            );
        }
    }
}

fn compile_match(c: &mut Collector, at: &[Seg], m: &RawMatch, builtin: bool) -> Option<Matcher> {
    let here = |f: &str| {
        let mut p = at.to_vec();
        p.push(Seg::from(f));
        p
    };
    let anchors = [
        m.method.is_some(),
        m.function.is_some(),
        m.macro_name.is_some(),
        m.command.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    let mut ok = true;
    if anchors > 1 {
        c.at(
            at,
            "a match names more than one of `method`, `function`, `macro`, `command`",
            Some("a call is one of these; split it into two apis".into()),
        );
        ok = false;
    }
    if anchors == 0 && m.text.is_empty() {
        c.at(
            at,
            "a match needs `method`, `function`, `macro`, `command` or `text`",
            Some("say what the call looks like, e.g. `method: set_nx`".into()),
        );
        ok = false;
    }
    for (field, value) in [("method", &m.method), ("macro", &m.macro_name)] {
        if let Some(v) = value {
            if !is_ident(v) {
                c.at(
                    &here(field),
                    format!("`{v}` is not a Rust identifier"),
                    Some("write the bare name, e.g. `set_nx`, without `.` or `()`".into()),
                );
                ok = false;
            }
        }
    }
    let function = m.function.as_ref().map(|f| {
        f.split("::")
            .map(|s| s.trim().to_string())
            .collect::<Vec<_>>()
    });
    if let Some(segs) = &function {
        if segs.iter().any(|s| !is_ident(s)) {
            c.at(
                &here("function"),
                format!(
                    "`{}` is not a Rust path",
                    m.function.as_deref().unwrap_or("")
                ),
                Some("write it as `Type::function` or `module::function`".into()),
            );
            ok = false;
        }
    }
    let mut regexes = |field: &str, list: &[String]| -> Vec<Pattern> {
        let mut out = Vec::new();
        for (i, pattern) in list.iter().enumerate() {
            match Pattern::new(pattern, builtin) {
                Ok(r) => out.push(r),
                Err(e) => {
                    let mut p = here(field);
                    p.push(Seg::Index(i));
                    c.at(
                        &p,
                        format!("invalid regex: {}", first_line(&e.to_string())),
                        Some("regex syntax: https://docs.rs/regex/latest/regex/#syntax".into()),
                    );
                    ok = false;
                }
            }
        }
        out
    };
    let text = regexes("text", &m.text);
    let no_text = regexes("no-text", &m.no_text);
    let receiver = match &m.receiver {
        Some(p) => match Pattern::new(p, builtin) {
            Ok(r) => Some(r),
            Err(e) => {
                c.at(
                    &here("receiver"),
                    format!("invalid regex: {}", first_line(&e.to_string())),
                    None,
                );
                ok = false;
                None
            }
        },
        None => None,
    };
    let receiver_strings = match &m.receiver_strings {
        Some(p) => match Pattern::new(p, builtin) {
            Ok(r) => Some(r),
            Err(e) => {
                c.at(
                    &here("receiver-strings"),
                    format!("invalid regex: {}", first_line(&e.to_string())),
                    None,
                );
                ok = false;
                None
            }
        },
        None => None,
    };
    if receiver_strings.is_some() && receiver.is_none() {
        c.at(
            &here("receiver-strings"),
            "`receiver-strings` is an alternative to `receiver`: give `receiver` too".to_string(),
            None,
        );
        ok = false;
    }
    let upper = |v: &[String]| v.iter().map(|w| w.to_uppercase()).collect::<Vec<_>>();
    ok.then(|| Matcher {
        method: m.method.clone(),
        function,
        macro_name: m.macro_name.clone(),
        command: m.command.as_ref().map(|s| s.to_uppercase()),
        args: m.args,
        words: upper(&m.words),
        any_words: upper(&m.any_words),
        no_words: upper(&m.no_words),
        chain: m.chain.clone(),
        no_chain: m.no_chain.clone(),
        text,
        no_text,
        receiver,
        receiver_strings,
        fields: m.fields.iter().map(|f| field_name(f)).collect(),
        no_fields: m.no_fields.iter().map(|f| field_name(f)).collect(),
        cleared_fields: m.cleared_fields.iter().map(|f| field_name(f)).collect(),
        needs_crate: m.evidence.unwrap_or(Evidence::Crate) == Evidence::Crate,
        crates: (!m.crates.is_empty()).then(|| m.crates.clone()),
    })
}

/// The locations of a key (or an owner value), each checked.
fn compile_keys(c: &mut Collector, at: &[Seg], raw: &[RawKey]) -> Vec<KeySpec> {
    let mut out = Vec::new();
    for (k, spec) in raw.iter().enumerate() {
        let mut here = at.to_vec();
        here.push(Seg::Index(k));
        match compile_key(spec) {
            Ok(s) => out.push(s),
            Err(msg) => c.at(
                &here,
                msg,
                Some(
                    "write one of `arg: 0`, `method: arg` (with optional `nth`), `call: version`, `field: key`, `root-arg: 0`, `script-arg: 1`, `param: 1`"
                        .into(),
                ),
            ),
        }
    }
    out
}

fn compile_key(k: &RawKey) -> Result<KeySpec, String> {
    if let Some(n) = k.param {
        let alone = k.arg.is_none()
            && k.method.is_none()
            && k.field.is_none()
            && k.root_arg.is_none()
            && k.nth.is_none()
            && k.call.is_none()
            && k.script_arg.is_none();
        return match (alone, n) {
            (false, _) => Err(
                "`param` stands alone: it names the value of a SQL statement's placeholder".into(),
            ),
            (true, 0) => Err("`param` counts from 1, as SQL's `$1` does".into()),
            (true, n) => Ok(KeySpec::Param(n)),
        };
    }
    if let Some(n) = k.script_arg {
        let alone = k.arg.is_none()
            && k.method.is_none()
            && k.field.is_none()
            && k.root_arg.is_none()
            && k.nth.is_none()
            && k.call.is_none();
        return match (alone, n) {
            (false, _) => {
                Err("`script-arg` stands alone: it names the `ARGV[n]` of a Lua script".into())
            }
            (true, 0) => Err("`script-arg` counts from 1, as Lua's `ARGV[1]` does".into()),
            (true, n) => Ok(KeySpec::ScriptArg(n)),
        };
    }
    if let Some(name) = &k.call {
        if k.method.is_none() && k.field.is_none() && k.root_arg.is_none() && k.nth.is_none() {
            return Ok(KeySpec::Call {
                name: name.clone(),
                arg: k.arg.unwrap_or(0),
            });
        }
    }
    match (k.arg, &k.method, &k.field, k.root_arg) {
        (Some(a), None, None, None) if k.nth.is_none() && k.call.is_none() => Ok(KeySpec::Arg(a)),
        (a, Some(m), None, None) => Ok(KeySpec::Method {
            name: m.clone(),
            nth: k.nth.unwrap_or(0),
            arg: a.unwrap_or(0),
        }),
        (None, None, Some(f), None) if k.nth.is_none() => Ok(KeySpec::Field(f.clone())),
        (None, None, None, Some(a)) if k.nth.is_none() => Ok(KeySpec::RootArg(a)),
        _ => Err(
            "a key names exactly one of `arg`, `method`, `call`, `field`, `root-arg`, `script-arg` or `param` (`nth` goes with `method`; `arg`, for the argument index, with `method` or `call`)"
                .into(),
        ),
    }
}

fn compile_expiry(c: &mut Collector, at: &[Seg], e: &RawExpiry, builtin: bool) -> Option<Expiry> {
    let missing = match e.from {
        ExpirySource::Words if e.words.is_empty() => {
            Some("`from: words` needs `words` (e.g. [EX, PX])")
        }
        ExpirySource::Arg if e.arg.is_none() => {
            Some("`from: arg` needs `arg` (the argument index)")
        }
        ExpirySource::Field if e.field.is_none() => Some("`from: field` needs `field`"),
        ExpirySource::Methods if e.methods.is_empty() => Some("`from: methods` needs `methods`"),
        ExpirySource::Text if e.text.is_empty() => {
            Some("`from: text` needs `text` (regexes, e.g. ['(?i)expir'])")
        }
        _ => None,
    };
    if let Some(msg) = missing {
        let mut p = at.to_vec();
        p.push(Seg::from("from"));
        c.at(&p, msg, None);
        return None;
    }
    let mut text = Vec::new();
    let mut ok = true;
    for (i, pattern) in e.text.iter().enumerate() {
        match Pattern::new(pattern, builtin) {
            Ok(r) => text.push(r),
            Err(err) => {
                let mut p = at.to_vec();
                p.extend([Seg::from("text"), Seg::Index(i)]);
                c.at(
                    &p,
                    format!("invalid regex: {}", first_line(&err.to_string())),
                    Some("regex syntax: https://docs.rs/regex/latest/regex/#syntax".into()),
                );
                ok = false;
            }
        }
    }
    ok.then(|| Expiry {
        from: e.from,
        words: e.words.iter().map(|w| w.to_uppercase()).collect(),
        arg: e.arg,
        field: e.field.clone(),
        methods: e.methods.clone(),
        text,
        note: e.note.clone(),
    })
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

fn first_line(s: &str) -> String {
    let line = s
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or(s)
        .trim();
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}
