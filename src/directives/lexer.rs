//! One lexical pass over a file: finds every comment, classifies every
//! line as blank, comment-only, attribute or code, and measures how deep the
//! code nests. syn throws comments away, so purpose annotations and
//! suppressions are read from here; and syn's parser recurses once per level
//! of nesting, so a file nested deeper than [`MAX_NESTING`] is not given to
//! it.
//!
//! The scanner knows just enough Rust to never mistake the inside of a string,
//! raw string, byte string or char literal for a comment, and it nests block
//! comments as rustc does.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// 1-based first and last line.
    pub line: usize,
    pub end_line: usize,
    /// Byte range of the whole comment, delimiters included.
    pub start: usize,
    pub end: usize,
    /// The comment's text without its delimiters.
    pub text: String,
    /// Code precedes the comment on its first line.
    pub trailing: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineInfo {
    /// The line has code outside comments.
    pub code: bool,
    /// The line has (part of) a comment.
    pub comment: bool,
    /// The line's code starts with `#[` or `#![` (an attribute).
    pub attribute: bool,
}

impl LineInfo {
    pub fn is_blank(&self) -> bool {
        !self.code && !self.comment
    }
}

pub struct Lexed {
    pub comments: Vec<Comment>,
    /// Index 0 is line 1.
    pub lines: Vec<LineInfo>,
    /// The offset where the code first nests deeper than [`MAX_NESTING`].
    pub too_deep: Option<usize>,
}

/// Deeper bracket nesting, generic nesting or a longer run of prefix
/// operators than this is reported as a parse error instead of risking the
/// parser's stack.
pub const MAX_NESTING: usize = 256;

/// How deep the code seen so far nests, outside comments and literals.
///
/// syn recurses once per bracket, generic argument and prefix operator,
/// but also once per construct whose operand runs to the end of the
/// expression: `return return …`, `yield …`, `break …`, closures
/// `|x| |x| …`, `fn() -> fn() -> …`, and once per qualified path
/// `<<… as A>::B as A>::B`. All of these are counted, and their sum is
/// what is bounded.
struct Nesting {
    /// Open brackets: `(`, `[`, `{`.
    brackets: usize,
    /// Open generic arguments (`Vec<`, `::<`, a qualified path's `<`). A
    /// comparison written `a<b` counts too, but only until the statement
    /// or block ends.
    angles: usize,
    /// Prefix operators in a row (`!!!!x`, `- - -x`, `&&&&x`, `*const
    /// *const T`): white space, comments, lifetimes and the words `const`,
    /// `mut`, `dyn` … do not break a run, operands do.
    ops: usize,
    /// Per open bracket: constructs that run to the end of the expression
    /// (`return`, `yield`, `break`, closures, `->`), ended by `,` or `;`
    /// or the bracket's end.
    open_ended: Vec<usize>,
    open_ended_total: usize,
    /// Per open bracket: `->` in a row (`fn() -> fn() -> …`); a return
    /// type also ends where a body starts (`{`).
    arrows: Vec<usize>,
    arrows_total: usize,
    /// A `let` whose own `=` is still to come: that one binds, it does
    /// not nest (`if let Some(x) = y {`).
    pending_let: bool,
    /// The last token was an operand (a name, a literal, a closing
    /// bracket): a `|` or `<` after it is binary, otherwise it opens a
    /// closure or a qualified path.
    after_operand: bool,
    too_deep: Option<usize>,
}

impl Default for Nesting {
    fn default() -> Self {
        Nesting {
            brackets: 0,
            angles: 0,
            ops: 0,
            open_ended: vec![0],
            open_ended_total: 0,
            arrows: vec![0],
            arrows_total: 0,
            pending_let: false,
            after_operand: false,
            too_deep: None,
        }
    }
}

/// Words after which an expression runs to its end: each is a level.
const OPEN_ENDED: [&[u8]; 6] = [b"return", b"yield", b"break", b"move", b"static", b"box"];
/// Words that neither end a run of prefix operators nor are operands.
const TRANSPARENT: [&[u8]; 18] = [
    b"const", b"mut", b"dyn", b"impl", b"unsafe", b"ref", b"as", b"in", b"let", b"if", b"else",
    b"match", b"while", b"for", b"loop", b"async", b"where", b"type",
];

impl Nesting {
    /// A byte of code at `i` (not part of an identifier, number, literal or
    /// comment). Returns how many bytes it took.
    fn code(&mut self, bytes: &[u8], i: usize) -> usize {
        let b = bytes[i];
        if b == b'-' && bytes.get(i + 1) == Some(&b'>') {
            // `fn() -> fn() -> …`: the return type runs on.
            if let Some(top) = self.arrows.last_mut() {
                *top += 1;
                self.arrows_total += 1;
            }
            self.check(i);
            self.ops = 0;
            self.after_operand = false;
            return 2;
        }
        if b == b'.' && bytes.get(i + 1) == Some(&b'.') {
            // `.. .. ..x`: a range with no start runs to the end.
            let prefix_position = !self.after_operand;
            let mut len = 2;
            if matches!(bytes.get(i + 2), Some(b'.' | b'=')) {
                len = 3;
            }
            self.ops = 0;
            self.after_operand = false;
            if prefix_position {
                self.open_ended_inc(i);
            }
            return len;
        }
        if b == b'=' && self.angles == 0 && is_assignment(bytes, i) {
            // `x = x = …`: an assignment's value runs to the end.
            self.ops = 0;
            self.after_operand = false;
            if std::mem::take(&mut self.pending_let) {
                return 1;
            }
            self.open_ended_inc(i);
            return 1;
        }
        if b == b'|' && self.after_operand && bytes.get(i + 1) == Some(&b'|') {
            // `a || b`: one binary operator.
            self.ops = 0;
            self.after_operand = false;
            return 2;
        }
        if b == b'|' && !self.after_operand {
            // A closure's parameters: its body runs on.
            self.open_ended_inc(i);
        }
        if matches!(b, b'!' | b'-' | b'*' | b'&' | b'|') {
            self.ops += 1;
            self.after_operand = false;
            self.check(i);
            return 1;
        }
        self.ops = 0;
        let prefix_position = !self.after_operand;
        self.after_operand = false;
        match b {
            b'<' if prefix_position
                || (i > 0 && (is_ident_byte(bytes[i - 1]) || bytes[i - 1] == b':')) =>
            {
                self.angles += 1;
                self.check(i);
            }
            b'>' => {
                self.angles = self.angles.saturating_sub(1);
                self.after_operand = true;
            }
            b';' | b',' => {
                if b == b';' {
                    self.angles = 0;
                    self.pending_let = false;
                }
                if let Some(top) = self.open_ended.last_mut() {
                    self.open_ended_total -= *top;
                    *top = 0;
                }
                self.end_arrows();
            }
            b'(' | b'[' | b'{' => {
                if b == b'{' {
                    self.angles = 0;
                    self.pending_let = false;
                    self.end_arrows();
                }
                self.brackets += 1;
                self.open_ended.push(0);
                self.arrows.push(0);
                self.check(i);
            }
            b')' | b']' | b'}' => {
                if b == b'}' {
                    self.angles = 0;
                    self.pending_let = false;
                }
                self.brackets = self.brackets.saturating_sub(1);
                if self.open_ended.len() > 1 {
                    let top = self.open_ended.pop().unwrap_or(0);
                    self.open_ended_total -= top;
                }
                if self.arrows.len() > 1 {
                    let top = self.arrows.pop().unwrap_or(0);
                    self.arrows_total -= top;
                }
                self.after_operand = true;
            }
            b'?' => self.after_operand = true,
            _ => {}
        }
        1
    }

    fn end_arrows(&mut self) {
        if let Some(top) = self.arrows.last_mut() {
            self.arrows_total -= *top;
            *top = 0;
        }
    }

    fn open_ended_inc(&mut self, i: usize) {
        if let Some(top) = self.open_ended.last_mut() {
            *top += 1;
            self.open_ended_total += 1;
        }
        self.check(i);
    }

    /// A word of code: an operand, unless it is one of the keywords that
    /// nest ([`OPEN_ENDED`]) or are transparent ([`TRANSPARENT`]).
    fn word(&mut self, word: &[u8], i: usize) {
        if OPEN_ENDED.contains(&word) {
            self.open_ended_inc(i);
            self.after_operand = false;
        } else if TRANSPARENT.contains(&word) {
            if word == b"let" || word == b"type" {
                self.pending_let = true;
            }
            self.after_operand = false;
        } else {
            self.operand();
        }
    }

    /// An operand: an identifier, number or literal ends a run of prefix
    /// operators.
    fn operand(&mut self) {
        self.ops = 0;
        self.after_operand = true;
    }

    fn check(&mut self, i: usize) {
        let level =
            self.brackets + self.angles + self.ops + self.open_ended_total + self.arrows_total;
        if level > MAX_NESTING && self.too_deep.is_none() {
            self.too_deep = Some(i);
        }
    }
}

/// Whether the `=` at `i` assigns (`=`, `+=`, `<<=`), rather than
/// compares (`==`, `!=`, `<=`, `>=`) or starts a match arm (`=>`).
fn is_assignment(bytes: &[u8], i: usize) -> bool {
    if matches!(bytes.get(i + 1), Some(b'=' | b'>')) {
        return false;
    }
    let prev = |k: usize| i.checked_sub(k).map(|j| bytes[j]);
    match prev(1) {
        Some(b'=' | b'!') => false,
        // `<=` compares, `<<=` assigns; the same for `>`.
        Some(c @ (b'<' | b'>')) => prev(2) == Some(c),
        _ => true,
    }
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl Lexed {
    pub fn line(&self, line: usize) -> LineInfo {
        if line == 0 {
            return LineInfo::default();
        }
        self.lines.get(line - 1).copied().unwrap_or_default()
    }
}

pub fn lex(text: &str) -> Lexed {
    let bytes = text.as_bytes();
    let line_count = bytes.iter().filter(|b| **b == b'\n').count() + 1;
    let mut lines = vec![LineInfo::default(); line_count];
    let mut comments = Vec::new();
    let mut line = 1usize;
    let mut i = 0usize;
    let mut nesting = Nesting::default();
    // Whether the current line has seen code yet, and whether that code began with '#'.
    let mut code_started_with_hash: Option<bool> = None;

    let mark_code = |lines: &mut Vec<LineInfo>, line: usize, first: &mut Option<bool>, b: u8| {
        let info = &mut lines[line - 1];
        if !info.code {
            info.code = true;
            *first = Some(b == b'#');
        }
    };

    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'\n' => {
                code_started_with_hash = None;
                line += 1;
                i += 1;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let start = i;
                let mut j = i;
                while j < bytes.len() && bytes[j] != b'\n' {
                    j += 1;
                }
                let body = &text[start + 2..j];
                let body = body
                    .strip_prefix('/')
                    .or_else(|| body.strip_prefix('!'))
                    .unwrap_or(body);
                let trailing = lines[line - 1].code;
                lines[line - 1].comment = true;
                comments.push(Comment {
                    line,
                    end_line: line,
                    start,
                    end: j,
                    text: body.to_string(),
                    trailing,
                });
                i = j;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let start = i;
                let first_line = line;
                let trailing = lines[line - 1].code;
                let mut depth = 0usize;
                let mut j = i;
                while j < bytes.len() {
                    if bytes[j] == b'/' && bytes.get(j + 1) == Some(&b'*') {
                        depth += 1;
                        j += 2;
                    } else if bytes[j] == b'*' && bytes.get(j + 1) == Some(&b'/') {
                        depth -= 1;
                        j += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if bytes[j] == b'\n' {
                            lines[line - 1].comment = true;
                            line += 1;
                            code_started_with_hash = None;
                        }
                        j += 1;
                    }
                }
                lines[line - 1].comment = true;
                let inner_end = if depth == 0 { j - 2 } else { j };
                let body = &text[(start + 2).min(inner_end)..inner_end];
                let body = body
                    .strip_prefix('*')
                    .or_else(|| body.strip_prefix('!'))
                    .unwrap_or(body);
                comments.push(Comment {
                    line: first_line,
                    end_line: line,
                    start,
                    end: j,
                    text: body.to_string(),
                    trailing,
                });
                i = j;
            }
            b'"' => {
                mark_code(&mut lines, line, &mut code_started_with_hash, b);
                nesting.operand();
                i = skip_string(bytes, i + 1, &mut line, &mut lines);
            }
            b'r' | b'b' | b'c' if starts_raw_string(bytes, i) => {
                mark_code(&mut lines, line, &mut code_started_with_hash, b);
                nesting.operand();
                i = skip_raw_string(bytes, i, &mut line, &mut lines);
            }
            b'\'' => {
                mark_code(&mut lines, line, &mut code_started_with_hash, b);
                let j = skip_char_or_lifetime(bytes, i);
                if j == i + 1 {
                    // A lifetime (`&'a &'a T`): part of a type, no operand.
                    let mut k = j;
                    while k < bytes.len() && is_ident_byte(bytes[k]) {
                        k += 1;
                    }
                    i = k;
                } else {
                    nesting.operand();
                    i = j;
                }
            }
            _ => {
                mark_code(&mut lines, line, &mut code_started_with_hash, b);
                if b == b'#' {
                    let next = bytes.get(i + 1).copied();
                    let next2 = bytes.get(i + 2).copied();
                    if lines[line - 1].code
                        && code_started_with_hash == Some(true)
                        && (next == Some(b'[') || (next == Some(b'!') && next2 == Some(b'[')))
                    {
                        lines[line - 1].attribute = true;
                    }
                }
                // Identifiers and numbers are skipped as a unit, so the `r`
                // or `b` inside a name never starts a string literal.
                if is_ident_byte(b) {
                    let mut j = i + 1;
                    while j < bytes.len() && is_ident_byte(bytes[j]) {
                        j += 1;
                    }
                    nesting.word(&bytes[i..j], i);
                    i = j;
                } else {
                    i += nesting.code(bytes, i);
                }
            }
        }
    }
    Lexed {
        comments,
        lines,
        too_deep: nesting.too_deep,
    }
}

fn skip_string(bytes: &[u8], mut i: usize, line: &mut usize, lines: &mut [LineInfo]) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            b'\n' => {
                *line += 1;
                if let Some(l) = lines.get_mut(*line - 1) {
                    l.code = true;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    i
}

fn starts_raw_string(bytes: &[u8], i: usize) -> bool {
    let mut j = i;
    if matches!(bytes.get(j), Some(b'b') | Some(b'c')) {
        j += 1;
    }
    if bytes.get(j) != Some(&b'r') {
        return false;
    }
    // Not a raw string when the `r` continues an identifier.
    if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_') {
        return false;
    }
    j += 1;
    while bytes.get(j) == Some(&b'#') {
        j += 1;
    }
    bytes.get(j) == Some(&b'"')
}

fn skip_raw_string(bytes: &[u8], i: usize, line: &mut usize, lines: &mut [LineInfo]) -> usize {
    let mut j = i;
    while bytes[j] != b'r' {
        j += 1;
    }
    j += 1;
    let mut hashes = 0;
    while bytes.get(j) == Some(&b'#') {
        hashes += 1;
        j += 1;
    }
    j += 1; // opening quote
    while j < bytes.len() {
        if bytes[j] == b'\n' {
            *line += 1;
            if let Some(l) = lines.get_mut(*line - 1) {
                l.code = true;
            }
        }
        if bytes[j] == b'"'
            && bytes[j + 1..]
                .iter()
                .take(hashes)
                .filter(|b| **b == b'#')
                .count()
                == hashes
        {
            return j + 1 + hashes;
        }
        j += 1;
    }
    j
}

fn skip_char_or_lifetime(bytes: &[u8], i: usize) -> usize {
    // 'a' or '\n' or '\u{..}' is a char; 'a (no closing quote soon) is a lifetime.
    if bytes.get(i + 1) == Some(&b'\\') {
        let mut j = i + 2;
        while j < bytes.len() && j < i + 12 {
            if bytes[j] == b'\'' {
                return j + 1;
            }
            j += 1;
        }
        return i + 1;
    }
    // A char literal holds one UTF-8 scalar.
    let mut j = i + 1;
    if j < bytes.len() {
        j += utf8_len(bytes[j]);
        if bytes.get(j) == Some(&b'\'') {
            return j + 1;
        }
    }
    i + 1
}

fn utf8_len(b: u8) -> usize {
    match b {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nesting_is_counted_outside_literals_and_comments() {
        let deep = |n: usize, open: &str| format!("fn f() {{ {} }}", open.repeat(n));
        let too_deep = |t: &str| lex(t).too_deep;
        assert!(too_deep(&deep(MAX_NESTING + 1, "(")).is_some());
        assert!(too_deep(&deep(MAX_NESTING - 5, "(")).is_none());
        assert!(too_deep(&deep(MAX_NESTING + 1, "!")).is_some());
        assert!(too_deep(&deep(MAX_NESTING + 1, "- ")).is_some());
        assert!(too_deep(&deep(MAX_NESTING + 1, "Vec<")).is_some());
        for shape in [
            "return ", "|x| ", "|x: u8| ", "move || ", "yield ", "break ", "*const ", "&'a ",
            "&mut ", "<",
        ] {
            assert!(too_deep(&deep(MAX_NESTING + 1, shape)).is_some(), "{shape}");
        }
        let arrows = format!("type F = {}u8;", "fn() -> ".repeat(MAX_NESTING + 1));
        assert!(too_deep(&arrows).is_some());
        // Inside literals and comments nothing counts.
        let quiet = [
            format!("const S: &str = \"{}\";", "(".repeat(1000)),
            format!("const S: &str = r#\"\"{}\"#;", "(".repeat(1000)),
            format!("const S: &[u8] = br\"{}\";", "[".repeat(1000)),
            format!("// {}\nfn f() {{}}", "-".repeat(1000)),
            format!(
                "/* /* {} */ {} */ fn f() {{}}",
                "*".repeat(1000),
                "(".repeat(1000)
            ),
            format!("fn f() {{ {} }}", "'('".repeat(1000)),
            format!("fn f() {{ {} }}", "a && b ".repeat(1000)),
            format!("fn f() {{ {} }}", "let x = a<b; ".repeat(1000)),
            format!("fn f() {{ {} }}", "if a {{ return; }} ".repeat(1000)),
            format!(
                "fn f() {{ match x {{ {} }} }}",
                "A => return 1, ".repeat(1000)
            ),
            format!(
                "fn f() {{ x{} }}",
                ".map(|a| a).filter(|b| *b)".repeat(1000)
            ),
            format!(
                "fn f() {{ {} }}",
                "let v: &'a mut Vec<u8> = &mut *w; ".repeat(1000)
            ),
            format!("fn f() {{ {} }}", "a || b | c; ".repeat(1000)),
            format!("fn f() {{ x = {}1; }}", "a || b | ".repeat(1000)),
            "fn f() -> impl Fn() -> u8 { || 1 }".to_string(),
            format!(
                "fn f() {{ {} }}",
                "let x = a == b && c <= d || e >= f; x += 1; ".repeat(1000)
            ),
            format!(
                "fn f() {{ {} }}",
                "match x {{ A => 1, _ => 2 }} for i in 0..n {{}} ".repeat(1000)
            ),
            "impl<T: Iterator<Item = u8>> A for B<T> {} fn g() -> u8 { 1 } ".repeat(1000),
            format!(
                "fn f() {{ {} }}",
                "let v = a..b; let w = ..c; ".repeat(1000)
            ),
            format!(
                "fn f() {{ {} }}",
                "if let Some(x) = y {{ }} while let Some(x) = it.next() {{ }} ".repeat(1000)
            ),
            format!(
                "impl A {{ {} }}",
                "fn g(&self, f: fn(u8) -> u8) -> u8 { 1 } ".repeat(1000)
            ),
        ];
        for q in quiet {
            assert_eq!(too_deep(&q), None, "{}", &q[..40]);
        }
    }

    use super::*;

    #[test]
    fn comments_in_strings_are_not_comments() {
        let l = lex("let a = \"// no\"; // yes\nlet b = r#\"/* no */\"#; /* yes */\n");
        let texts: Vec<_> = l.comments.iter().map(|c| c.text.trim()).collect();
        assert_eq!(texts, ["yes", "yes"]);
        assert!(l.comments.iter().all(|c| c.trailing));
    }

    #[test]
    fn nested_block_comments_and_lines() {
        let l = lex("/* a /* b */ c */\n#[attr]\n\nfn x<'a>(c: char) { let q = '\"'; } // t\n");
        assert_eq!(l.comments.len(), 2);
        assert!(l.line(2).attribute);
        assert!(l.line(3).is_blank());
        assert!(l.comments[1].trailing);
        assert_eq!(l.comments[1].text.trim(), "t");
    }

    #[test]
    fn doc_comments_are_comments() {
        let l = lex("/// lock-purpose: efficiency\nfn f() {}\n");
        assert_eq!(l.comments[0].text.trim(), "lock-purpose: efficiency");
        assert!(!l.comments[0].trailing);
    }
}
