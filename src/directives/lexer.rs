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
    /// Where the code first nests deeper than [`MAX_NESTING`] or chains
    /// longer than [`MAX_CHAIN`].
    pub too_deep: Option<Deep>,
}

/// Deeper bracket nesting, generic nesting or a longer run of prefix
/// operators than this is reported as a parse error instead of risking the
/// parser's stack.
pub const MAX_NESTING: usize = 256;

/// A longer chain of binary operators, method calls, fields, `?`, casts or
/// `else if` than this is reported as a parse error: syn parses such a
/// chain in a loop, but the tree it builds is as deep as the chain, and
/// dropping or visiting it recurses once per link.
pub const MAX_CHAIN: usize = 20_000;

/// Where and how the code first goes past what the parser is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deep {
    /// Nested deeper than [`MAX_NESTING`] levels at this byte offset.
    Nesting(usize),
    /// Chained longer than [`MAX_CHAIN`] links at this byte offset.
    Chain(usize),
}

impl Deep {
    pub fn offset(self) -> usize {
        match self {
            Deep::Nesting(o) | Deep::Chain(o) => o,
        }
    }
}

/// What is open inside one bracket (the file itself is the outermost).
#[derive(Default)]
struct Frame {
    /// Constructs that run to the end of the expression (`return`,
    /// `yield`, `break`, `let`, closures, `@`, `..`, assignments) and
    /// control flow still waiting for its body (`if`, `while`, `match`,
    /// `for`).
    open: usize,
    /// `->` in a row (`fn() -> fn() -> …`); a return type also ends where
    /// a body starts (`{`).
    arrows: usize,
    /// Open generic arguments (`Vec<`, `::<`, a qualified path's `<`). A
    /// comparison written `a<b` counts too, until the statement, the
    /// block or the bracket ends.
    angles: usize,
    /// Links of the current chain (`a + b`, `.m()`, `.f`, `?`, `as`,
    /// `else`, a call or index).
    chain: usize,
    /// Inside a closure's parameters (`|a, b|`): a comma there ends
    /// nothing.
    in_params: bool,
    /// A `let` whose own `=` is still to come.
    pending_let: bool,
    /// Control flow waiting for its body, innermost last: what `open`
    /// was before it, and whether its body may come (a `for` only after
    /// its `in`).
    keywords: Vec<(usize, bool)>,
    /// This bracket is the body of the innermost control flow of the
    /// bracket around it: when it closes, that construct is complete.
    body: bool,
    /// An `impl` header is open: its `for` is no loop.
    in_impl: bool,
}

/// How deep the code seen so far nests, outside comments and literals.
///
/// syn recurses once per bracket, generic argument and prefix operator,
/// and once per construct whose operand runs on: `return …`, `yield …`,
/// `break …`, `let … = …`, closures `|a, b| …`, `a @ …`, `x = …`,
/// `fn() -> …`, qualified paths `<… as A>::B`, and the condition of `if`,
/// `while`, `match` and `for`. Each such construct counts as a level
/// until syn is certainly done with it: its bracket closes, a `;` ends
/// the statement, a `,` or `=>` of the list it is in follows (a comma
/// inside a closure's parameters or generic arguments ends nothing), or,
/// for control flow, its body block closes. What is bounded is the sum
/// over every open bracket.
struct Nesting {
    frames: Vec<Frame>,
    /// Sums over `frames`.
    open_total: usize,
    arrows_total: usize,
    angles_total: usize,
    chain_total: usize,
    /// Prefix operators in a row (`!!!!x`, `- - -x`, `&&&&x`, `*const
    /// *const T`): white space, comments, lifetimes and the words `const`,
    /// `mut`, `dyn` … do not break a run, operands do.
    ops: usize,
    /// The last token was an operand (a name, a literal, a closing
    /// bracket): a `|` or `<` after it is binary, otherwise it opens a
    /// closure or a qualified path.
    after_operand: bool,
    /// The last word followed a `.` (a method's name: its `(` is part of
    /// the same link).
    after_dot_word: bool,
    too_deep: Option<Deep>,
}

impl Default for Nesting {
    fn default() -> Self {
        Nesting {
            frames: vec![Frame::default()],
            open_total: 0,
            arrows_total: 0,
            angles_total: 0,
            chain_total: 0,
            ops: 0,
            after_operand: false,
            after_dot_word: false,
            too_deep: None,
        }
    }
}

/// Words after which an expression runs to its end: each is a level.
const OPEN_ENDED: [&[u8]; 7] = [
    b"return", b"yield", b"break", b"move", b"static", b"box", b"let",
];
/// Words that wait for a body: a level until it closes.
const CONTROL: [&[u8]; 4] = [b"if", b"while", b"match", b"for"];
/// Words that neither end a run of prefix operators nor are operands.
const TRANSPARENT: [&[u8]; 14] = [
    b"const", b"mut", b"dyn", b"impl", b"unsafe", b"ref", b"in", b"else", b"loop", b"async",
    b"where", b"type", b"raw", b"as",
];

impl Nesting {
    fn top(&mut self) -> &mut Frame {
        self.frames
            .last_mut()
            .expect("the file's frame is never closed")
    }

    /// A byte of code at `i` (not part of an identifier, number, literal or
    /// comment). Returns how many bytes it took.
    fn code(&mut self, bytes: &[u8], i: usize) -> usize {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        let dot_word = std::mem::take(&mut self.after_dot_word);
        if b == b'-' && next == Some(b'>') {
            // `fn() -> fn() -> …`: the return type runs on.
            self.top().arrows += 1;
            self.arrows_total += 1;
            self.check(i);
            self.ops = 0;
            self.after_operand = false;
            return 2;
        }
        if b == b'=' && next == Some(b'>') {
            // A match arm: its pattern and guard are done.
            self.end_list(false);
            self.ops = 0;
            self.after_operand = false;
            return 2;
        }
        if b == b'.' && next == Some(b'.') {
            // `.. .. ..x`: a range with no start runs to the end.
            let prefix_position = !self.after_operand;
            let mut len = 2;
            if matches!(bytes.get(i + 2), Some(b'.' | b'=')) {
                len = 3;
            }
            self.ops = 0;
            self.after_operand = false;
            if prefix_position {
                self.open_inc(i);
            } else {
                self.chain_inc(i);
            }
            return len;
        }
        if b == b'.' {
            // `.field`, `.method(…)`, `.await`, `.0`: one link.
            self.chain_inc(i);
            self.ops = 0;
            self.after_operand = false;
            self.after_dot_word = true;
            return 1;
        }
        if b == b'=' && self.top().angles == 0 && is_assignment(bytes, i) {
            // `x = x = …`: an assignment's value runs to the end.
            self.ops = 0;
            self.after_operand = false;
            if std::mem::take(&mut self.top().pending_let) {
                return 1;
            }
            self.open_inc(i);
            return 1;
        }
        if b == b'|' && self.top().in_params {
            // The end of a closure's parameters: its body follows.
            self.top().in_params = false;
            self.ops = 0;
            self.after_operand = false;
            return 1;
        }
        if b == b'|' && self.after_operand && next == Some(b'|') {
            // `a || b`: one binary operator.
            self.chain_inc(i);
            self.ops = 0;
            self.after_operand = false;
            return 2;
        }
        if b == b'|' && !self.after_operand {
            // A closure's parameters: its body runs on.
            self.open_inc(i);
            self.ops = 0;
            if next == Some(b'|') {
                return 2;
            }
            self.top().in_params = true;
            return 1;
        }
        if self.after_operand && matches!(b, b'+' | b'-' | b'*' | b'/' | b'%' | b'^' | b'&' | b'|')
        {
            // A binary operator: one link of a chain.
            self.chain_inc(i);
            self.ops = 0;
            self.after_operand = false;
            return 1;
        }
        if matches!(b, b'!' | b'-' | b'*' | b'&') {
            self.ops += 1;
            self.after_operand = false;
            self.check(i);
            return 1;
        }
        if b == b'@' {
            // `a @ a @ …`: a binding's pattern runs on.
            self.ops = 0;
            self.after_operand = false;
            self.open_inc(i);
            return 1;
        }
        self.ops = 0;
        let prefix_position = !self.after_operand;
        let after_operand = self.after_operand;
        self.after_operand = false;
        match b {
            b'<' if prefix_position
                || (i > 0 && (is_ident_byte(bytes[i - 1]) || bytes[i - 1] == b':')) =>
            {
                self.top().angles += 1;
                self.angles_total += 1;
                self.check(i);
            }
            b'<' => self.chain_inc(i),
            b'>' => {
                let top = self.top();
                if top.angles > 0 {
                    top.angles -= 1;
                    self.angles_total -= 1;
                } else if after_operand {
                    self.chain_inc(i);
                    return 1;
                }
                self.after_operand = true;
            }
            b';' => self.end_list(true),
            b',' => {
                let top = self.top();
                if !top.in_params && top.angles == 0 {
                    self.end_list(false);
                }
            }
            b'(' | b'[' | b'{' => {
                if after_operand && b != b'{' && !dot_word {
                    // A call or an index: one link.
                    self.chain_inc(i);
                }
                let mut body = false;
                if b == b'{' {
                    self.end_angles();
                    self.end_arrows();
                    let top = self.top();
                    body = after_operand
                        && !top.pending_let
                        && top.keywords.last().is_some_and(|k| k.1);
                    top.pending_let = false;
                    top.in_impl = false;
                }
                self.frames.push(Frame {
                    body,
                    ..Frame::default()
                });
                self.check(i);
            }
            b')' | b']' | b'}' => {
                if self.frames.len() > 1 {
                    let f = self.frames.pop().unwrap_or_default();
                    self.open_total -= f.open;
                    self.arrows_total -= f.arrows;
                    self.angles_total -= f.angles;
                    self.chain_total -= f.chain;
                    if f.body {
                        let top = self.top();
                        if let Some((before, _)) = top.keywords.pop() {
                            let done = top.open.saturating_sub(before);
                            top.open -= done;
                            self.open_total -= done;
                        }
                    }
                }
                if b == b'}' {
                    self.end_angles();
                    self.top().pending_let = false;
                }
                self.after_operand = true;
            }
            b'?' => {
                self.chain_inc(i);
                self.after_operand = true;
            }
            _ => {}
        }
        1
    }

    /// A `;` (`statement`), or a `,` or `=>` of a list: syn is back in
    /// the loop of the bracket, so what was open in it is done.
    fn end_list(&mut self, statement: bool) {
        let top = self.frames.last_mut().expect("the file's frame");
        self.open_total -= std::mem::take(&mut top.open);
        self.chain_total -= std::mem::take(&mut top.chain);
        top.keywords.clear();
        if statement {
            top.pending_let = false;
            top.in_params = false;
            top.in_impl = false;
            self.end_angles();
        }
        self.end_arrows();
    }

    fn end_arrows(&mut self) {
        let top = self.frames.last_mut().expect("the file's frame");
        self.arrows_total -= std::mem::take(&mut top.arrows);
    }

    fn end_angles(&mut self) {
        let top = self.frames.last_mut().expect("the file's frame");
        self.angles_total -= std::mem::take(&mut top.angles);
    }

    fn open_inc(&mut self, i: usize) {
        self.top().open += 1;
        self.open_total += 1;
        self.check(i);
    }

    fn chain_inc(&mut self, i: usize) {
        self.top().chain += 1;
        self.chain_total += 1;
        if self.chain_total > MAX_CHAIN && self.too_deep.is_none() {
            self.too_deep = Some(Deep::Chain(i));
        }
    }

    /// A word of code: an operand, unless it is one of the keywords that
    /// nest ([`OPEN_ENDED`], [`CONTROL`]) or are transparent
    /// ([`TRANSPARENT`]).
    fn word(&mut self, bytes: &[u8], i: usize, j: usize) {
        let word = &bytes[i..j];
        let dot_word = std::mem::take(&mut self.after_dot_word);
        if dot_word {
            // A field's or method's name: part of the link its `.` began.
            self.operand();
            self.after_dot_word = true;
            return;
        }
        if self.after_operand && !TRANSPARENT.contains(&word) {
            // Two operands in a row: a new statement or item, so no chain
            // goes on.
            let top = self.frames.last_mut().expect("the file's frame");
            self.chain_total -= std::mem::take(&mut top.chain);
        }
        if word == b"impl" {
            self.top().in_impl = true;
        }
        let hrtb = || bytes[j..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<');
        if word == b"for" && (self.top().in_impl || hrtb()) {
            // `impl A for B`, `for<'a>`: no loop.
            self.after_operand = false;
            return;
        }
        if CONTROL.contains(&word) {
            let top = self.top();
            let before = top.open;
            top.keywords.push((before, word != b"for"));
            self.open_inc(i);
            self.after_operand = false;
        } else if OPEN_ENDED.contains(&word) {
            if word == b"let" {
                self.top().pending_let = true;
            }
            self.open_inc(i);
            self.after_operand = false;
        } else if TRANSPARENT.contains(&word) {
            if word == b"type" {
                self.top().pending_let = true;
            }
            if word == b"in" {
                if let Some(k) = self.top().keywords.last_mut() {
                    k.1 = true;
                }
            }
            if matches!(word, b"as" | b"else") {
                self.chain_inc(i);
            }
            self.after_operand = false;
        } else {
            self.operand();
        }
    }

    /// An operand: an identifier, number or literal ends a run of prefix
    /// operators.
    fn operand(&mut self) {
        self.after_dot_word = false;
        self.ops = 0;
        self.after_operand = true;
    }

    fn check(&mut self, i: usize) {
        let level = self.frames.len() - 1
            + self.angles_total
            + self.ops
            + self.open_total
            + self.arrows_total;
        if level > MAX_NESTING && self.too_deep.is_none() {
            self.too_deep = Some(Deep::Nesting(i));
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
                    nesting.word(bytes, i, j);
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

/// The byte ranges of the bodies of the string literals in `bytes`
/// (plain, byte, C and raw strings), in order: comments, char literals and
/// identifiers are skipped as the lexer skips them. An unterminated string
/// runs to the end.
pub fn string_bodies(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut line = 1usize;
    let mut i = 0usize;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let mut depth = 0usize;
                while i < bytes.len() {
                    if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'"' => {
                let end = skip_string(bytes, i + 1, &mut line, &mut []);
                let end = end.min(bytes.len());
                let close = if end >= i + 2 && bytes[end - 1] == b'"' {
                    end - 1
                } else {
                    end
                };
                out.push(i + 1..close);
                i = end;
            }
            b'r' | b'b' | b'c' if starts_raw_string(bytes, i) => {
                let mut open = i;
                while bytes[open] != b'"' {
                    open += 1;
                }
                let end = skip_raw_string(bytes, i, &mut line, &mut []);
                out.push(open + 1..end.clamp(open + 1, bytes.len()));
                i = end;
            }
            b'\'' => i = skip_char_or_lifetime(bytes, i),
            _ if is_ident_byte(b) => {
                while i < bytes.len() && is_ident_byte(bytes[i]) {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// Whether `at` lies in one of `ranges` (sorted, as [`string_bodies`]
/// gives them).
pub fn inside(ranges: &[std::ops::Range<usize>], at: usize) -> bool {
    let k = ranges.partition_point(|r| r.end <= at);
    ranges.get(k).is_some_and(|r| r.start <= at)
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
        // Control flow in condition position, `let` chains, closures with
        // several parameters, bindings, turbofish and generic closures.
        let n = MAX_NESTING + 1;
        let control = [
            format!("fn g() {{ {}x{} }}", "while ".repeat(n), " {}".repeat(n)),
            format!("fn g() {{ {}x{} }}", "if ".repeat(n), " {}".repeat(n)),
            format!("fn g() {{ {}x{} }}", "match ".repeat(n), " {}".repeat(n)),
            format!("fn g() {{ {}x{} }}", "for x in ".repeat(n), " {}".repeat(n)),
            format!("fn g() {{ if {}x {{}} }}", "let a = ".repeat(n)),
            format!("fn g() {{ if {}x {{}} }}", "let S {a} = ".repeat(n)),
            format!("fn g() {{ {}x {{}} }}", "while || {} + ".repeat(n)),
            format!("fn g() {{ let f = {}1; }}", "|a, b| ".repeat(n)),
            format!("fn g() {{ let f = {}1; }}", "|a: Vec<A, B>| ".repeat(n)),
            format!("fn g() {{ let {}a = 1; }}", "a @ &".repeat(n)),
            format!("fn g() {{ {}1; }}", "return f::<A, B>() + ".repeat(n)),
            format!(
                "fn g() {{ {}x{} }}",
                "} for x in {".repeat(n),
                "}".repeat(0)
            ),
        ];
        for c in &control {
            assert!(
                matches!(too_deep(c), Some(Deep::Nesting(_))),
                "{}",
                &c[..60.min(c.len())]
            );
        }
        // Chains syn parses in a loop but builds as deep trees.
        let m = MAX_CHAIN + 1;
        let chains = [
            format!("fn g() {{ x{}; }}", " + a".repeat(m)),
            format!("fn g() {{ x{}; }}", ".b()".repeat(m)),
            format!("fn g() {{ x{}; }}", "?".repeat(m)),
            format!("fn g() {{ x{}; }}", "[0]".repeat(m)),
            format!("fn g() {{ x{}; }}", " as u8".repeat(m)),
            format!("fn g() {{ if a {{}} {} }}", "else if a {} ".repeat(m)),
        ];
        for c in &chains {
            assert!(
                matches!(too_deep(c), Some(Deep::Chain(_))),
                "{}",
                &c[..60.min(c.len())]
            );
        }
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
            format!(
                "fn f() {{ {} }}",
                "while let Some(x) = it.next() { if x > 0 { match x { A => 1, _ => 2 }; } } for (a, b) in v.iter().rev() { } loop { break; } ".repeat(1000)
            ),
            format!(
                "fn f() {{ {} }}",
                "let f = |a, b| a + b; let g = move |a: u8, b: Vec<u8>| b.len(); if let x @ Some(_) = y { } ".repeat(1000)
            ),
            format!(
                "fn f() {{ {} }}",
                "if a {} else if b {} else {} x = y.z()?.w; ".repeat(1000)
            ),
            format!(
                "fn f() {{ x = {}1; }}",
                "a.b(c).d[e]? + ".repeat(1000)
            ),
            "impl<T> A for B<T> where for<'a> T: Fn(&'a u8) { fn f() -> Vec<u8> { v } } ".repeat(1000),
            format!(
                "fn f() {{ {} }}",
                "match x { A | B if c => {} C @ 1..=2 => return, _ => {} } ".repeat(1000)
            ),
            format!("fn f() {{ let _ = a{}; }}", ".b(\"SET\").c(k)".repeat(MAX_CHAIN / 2 - 10)),
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
