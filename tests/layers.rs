//! Import circles in src/: every `use crate::...`, `use super::...` and `crate::a::b` / `super::x`
//! path is an edge from the file that writes it to the file that defines the module it names, and
//! from that file's top-level folder (src/<folder>/, or a root file such as context.rs) to the
//! other's. A cycle in either graph fails the test and is listed with the line of every edge.
//!
//! A parent naming its own child (`mod body;`, `body::run`) is the module tree, not an import, and
//! is not an edge; a child reaching up (`super::Params`) is. Paths are read from the token stream,
//! so comments and strings never count, and paths inside macros (`format!`, `tokio::select!`) do.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// File circles tolerated while a change removes them, each with every file in it and why: such a
/// circle, exactly, is not a failure. An entry that no longer matches a circle fails (the circle
/// is gone or has grown), so the list empties itself. Empty since issue 40 broke the last three.
const ALLOWED_FILE_CIRCLES: &[(&[&str], &str)] = &[];

/// A module's path from the crate root: `["analysis", "judge"]`.
type ModPath = Vec<String>;

/// One edge with where it was written, for the listing.
#[derive(Debug, Clone)]
struct Edge {
    from: String,
    to: String,
    /// The file and line that wrote the path.
    at: String,
    path: String,
}

/// Every `.rs` file of the library under `src`, by module path (src/main.rs is the binary's).
fn module_files(src: &Path) -> BTreeMap<ModPath, String> {
    let mut files = BTreeMap::new();
    walk(src, src, &mut files);
    files
}

fn walk(src: &Path, dir: &Path, files: &mut BTreeMap<ModPath, String>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(src, &path, files);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(src).expect("under src");
        if rel == Path::new("main.rs") {
            continue;
        }
        let mut module: ModPath = rel
            .with_extension("")
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if module.last().is_some_and(|l| l == "mod" || l == "lib") {
            module.pop();
        }
        files.insert(module, rel.to_string_lossy().into_owned());
    }
}

/// The file that defines `target`: the longest prefix of it that is a file's module.
fn resolve<'a>(files: &'a BTreeMap<ModPath, String>, target: &[String]) -> Option<&'a String> {
    (0..=target.len())
        .rev()
        .find_map(|n| files.get(&target[..n]))
}

/// The paths one file names.
#[derive(Default)]
struct Reader {
    /// Each absolute path named, with its line.
    found: Vec<(ModPath, usize)>,
    /// Names a `use crate::...` or `use super::...` binds (`use crate::analysis;` binds
    /// `analysis`), so a later `analysis::judge::x` counts as naming `crate::analysis::judge`.
    aliases: BTreeMap<String, ModPath>,
}

impl Reader {
    /// Walks `tokens` written inside module `here`.
    fn tokens(&mut self, here: &ModPath, tokens: TokenStream) {
        let list: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < list.len() {
            match &list[i] {
                TokenTree::Ident(id) if id == "use" => {
                    let end = (i + 1..list.len())
                        .find(|&j| is_punct(&list[j], ';'))
                        .unwrap_or(list.len());
                    self.use_tree(here, &[], &list[i + 1..end]);
                    i = end;
                }
                TokenTree::Ident(id) if id == "mod" => {
                    if let (Some(TokenTree::Ident(name)), Some(TokenTree::Group(body))) =
                        (list.get(i + 1), list.get(i + 2))
                    {
                        if body.delimiter() == Delimiter::Brace {
                            let mut inner = here.clone();
                            inner.push(name.to_string());
                            self.tokens(&inner, body.stream());
                            i += 3;
                            continue;
                        }
                    }
                }
                TokenTree::Ident(id)
                    if (id == "crate" || id == "super") && is_sep(&list, i + 1) =>
                {
                    let (segments, next) = path_at(&list, i);
                    let target = absolute(here, &segments);
                    self.found.push((target, line_of(&list[i])));
                    i = next;
                    continue;
                }
                TokenTree::Ident(id)
                    if is_sep(&list, i + 1) && self.aliases.contains_key(&id.to_string()) =>
                {
                    let (segments, next) = path_at(&list, i);
                    let mut target = self.aliases[&id.to_string()].clone();
                    target.extend(segments[1..].iter().cloned());
                    self.found.push((target, line_of(&list[i])));
                    i = next;
                    continue;
                }
                TokenTree::Group(g) => self.tokens(here, g.stream()),
                _ => {}
            }
            i += 1;
        }
    }

    /// One `use` tree below `prefix`: `a::b`, `a::{b, c::*}`, `a as b`.
    fn use_tree(&mut self, here: &ModPath, prefix: &[String], list: &[TokenTree]) {
        let mut segments = prefix.to_vec();
        let mut alias = None;
        for (i, token) in list.iter().enumerate() {
            match token {
                TokenTree::Ident(id) if id == "as" => {
                    alias = list.get(i + 1).map(|t| t.to_string());
                    break;
                }
                TokenTree::Ident(id) => {
                    if segments.is_empty() && i > 0 {
                        // `use a::b` after a leading `::`: an external crate.
                        return;
                    }
                    segments.push(id.to_string());
                }
                TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                    for part in split_commas(g.stream()) {
                        self.use_tree(here, &segments, &part);
                    }
                    return;
                }
                _ => {}
            }
        }
        if segments.last().is_some_and(|s| s == "self") {
            segments.pop();
        }
        let line = list.first().map(line_of).unwrap_or(0);
        if !matches!(
            segments.first().map(String::as_str),
            Some("crate" | "super")
        ) {
            return;
        }
        let target = absolute(here, &segments);
        if let Some(name) = alias.or_else(|| segments.last().cloned()) {
            if name != "_" && name != "super" && name != "crate" {
                self.aliases.insert(name, target.clone());
            }
        }
        self.found.push((target, line));
    }
}

/// The absolute module path of `segments` (starting with `crate` or `super`) written in `here`.
fn absolute(here: &ModPath, segments: &[String]) -> ModPath {
    let mut target = here.clone();
    let mut rest = segments;
    if rest.first().is_some_and(|s| s == "crate") {
        target.clear();
        rest = &rest[1..];
    }
    while rest.first().is_some_and(|s| s == "super") {
        target.pop();
        rest = &rest[1..];
    }
    target.extend(rest.iter().cloned());
    target
}

/// Every absolute path `tokens` (the file of `module`) names: a first pass learns the names its
/// `use` lines bind, wherever they stand, the second reads every path.
fn paths_named(module: &ModPath, tokens: TokenStream) -> Vec<(ModPath, usize)> {
    let mut reader = Reader::default();
    reader.tokens(module, tokens.clone());
    reader.found.clear();
    reader.tokens(module, tokens);
    reader.found
}

fn is_punct(token: &TokenTree, c: char) -> bool {
    matches!(token, TokenTree::Punct(p) if p.as_char() == c)
}

/// `::` at `i`.
fn is_sep(list: &[TokenTree], i: usize) -> bool {
    list.get(i).is_some_and(|t| is_punct(t, ':'))
        && list.get(i + 1).is_some_and(|t| is_punct(t, ':'))
}

/// The identifiers of the path starting at `i` (`crate::a::b`), and the index after it.
fn path_at(list: &[TokenTree], i: usize) -> (Vec<String>, usize) {
    let mut segments = Vec::new();
    let mut j = i;
    while let Some(TokenTree::Ident(id)) = list.get(j) {
        segments.push(id.to_string());
        if !is_sep(list, j + 1) {
            return (segments, j + 1);
        }
        j += 3;
    }
    (segments, j)
}

fn split_commas(stream: TokenStream) -> Vec<Vec<TokenTree>> {
    let mut parts = vec![Vec::new()];
    for token in stream {
        if is_punct(&token, ',') {
            parts.push(Vec::new());
        } else if let Some(last) = parts.last_mut() {
            last.push(token);
        }
    }
    parts.retain(|p| !p.is_empty());
    parts
}

fn line_of(token: &TokenTree) -> usize {
    token.span().start().line
}

/// Every import edge between files under `src`.
fn file_edges(src: &Path) -> Vec<Edge> {
    let files = module_files(src);
    let mut edges = Vec::new();
    for (module, rel) in &files {
        let text = std::fs::read_to_string(src.join(rel)).expect("reading a source file");
        let tokens = TokenStream::from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e:?}"));
        for (target, line) in paths_named(module, tokens) {
            // A parent naming its own child (or itself) is the module tree, not an import.
            if target.starts_with(module) {
                continue;
            }
            if let Some(to) = resolve(&files, &target) {
                edges.push(Edge {
                    from: rel.clone(),
                    to: to.clone(),
                    at: format!("{rel}:{line}"),
                    path: target.join("::"),
                });
            }
        }
    }
    edges
}

/// `server/cleanup.rs` -> `server`; `context.rs` -> `context`.
fn folder(file: &str) -> String {
    let first = file.split('/').next().unwrap_or(file);
    first.trim_end_matches(".rs").to_string()
}

fn folder_edges(edges: &[Edge]) -> Vec<Edge> {
    (edges.iter())
        .filter(|e| folder(&e.from) != folder(&e.to))
        .map(|e| Edge {
            from: folder(&e.from),
            to: folder(&e.to),
            ..e.clone()
        })
        .collect()
}

/// The strongly connected components of more than one node (Tarjan's algorithm, iterative in
/// spirit but small enough to recurse), each sorted, in a stable order.
fn cycles(edges: &[Edge]) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in edges {
        next.entry(&e.from).or_default().insert(&e.to);
        next.entry(&e.to).or_default();
    }
    let mut state = Tarjan::default();
    let nodes: Vec<&str> = next.keys().copied().collect();
    for node in nodes {
        if !state.index.contains_key(node) {
            state.visit(node, &next);
        }
    }
    let mut found: Vec<Vec<String>> = (state.components.into_iter())
        .filter(|c| c.len() > 1)
        .map(|mut c| {
            c.sort();
            c.into_iter().map(str::to_string).collect()
        })
        .collect();
    found.sort();
    found
}

#[derive(Default)]
struct Tarjan<'a> {
    index: BTreeMap<&'a str, usize>,
    low: BTreeMap<&'a str, usize>,
    stack: Vec<&'a str>,
    on_stack: BTreeSet<&'a str>,
    components: Vec<Vec<&'a str>>,
}

impl<'a> Tarjan<'a> {
    fn visit(&mut self, node: &'a str, next: &BTreeMap<&'a str, BTreeSet<&'a str>>) {
        let n = self.index.len();
        self.index.insert(node, n);
        self.low.insert(node, n);
        self.stack.push(node);
        self.on_stack.insert(node);
        for &to in &next[node] {
            if !self.index.contains_key(to) {
                self.visit(to, next);
                let low = self.low[node].min(self.low[to]);
                self.low.insert(node, low);
            } else if self.on_stack.contains(to) {
                let low = self.low[node].min(self.index[to]);
                self.low.insert(node, low);
            }
        }
        if self.low[node] == self.index[node] {
            let mut component = Vec::new();
            while let Some(top) = self.stack.pop() {
                self.on_stack.remove(top);
                component.push(top);
                if top == node {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// One cycle inside `members` with the edges that make it, as lines for the failure message: the
/// shortest way back to the first member from each of its successors.
fn describe(members: &[String], edges: &[Edge]) -> String {
    let inside = |e: &&Edge| members.contains(&e.from) && members.contains(&e.to);
    let within: Vec<&Edge> = edges.iter().filter(inside).collect();
    let start = &members[0];
    // Breadth first from `start` until it is reached again.
    let mut came_by: BTreeMap<&str, &Edge> = BTreeMap::new();
    let mut frontier = vec![start.as_str()];
    'search: while !frontier.is_empty() {
        let mut next = Vec::new();
        for node in frontier {
            for e in within.iter().filter(|e| e.from == node) {
                if e.to == *start {
                    came_by.insert(start, e);
                    break 'search;
                }
                if !came_by.contains_key(e.to.as_str()) {
                    came_by.insert(&e.to, e);
                    next.push(e.to.as_str());
                }
            }
        }
        frontier = next;
    }
    let mut steps = Vec::new();
    let mut at = start.as_str();
    while let Some(e) = came_by.get(at) {
        steps.push(format!(
            "    {} -> {}   ({} {})",
            e.from, e.to, e.at, e.path
        ));
        at = &e.from;
        if at == start {
            break;
        }
    }
    steps.reverse();
    let mut shown = members.join(", ");
    if shown.len() > 400 {
        shown = format!("{} ... ({} members)", &shown[..400], members.len());
    }
    format!(
        "  circle of {}: {shown}\n  for example:\n{}",
        members.len(),
        steps.join("\n")
    )
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn fail_on_cycles(kind: &str, edges: &[Edge], allowed: &[(&[&str], &str)]) {
    let mut found = cycles(edges);
    for (members, why) in allowed {
        let before = found.len();
        found.retain(|c| c.iter().map(String::as_str).ne(members.iter().copied()));
        assert!(
            found.len() < before,
            "the allowed circle of {members:?} ({why}) is gone or has changed: remove it from \
             ALLOWED_FILE_CIRCLES (any circle it became is listed by this test without it)"
        );
    }
    let listed: Vec<String> = found.iter().map(|c| describe(c, edges)).collect();
    assert!(
        found.is_empty(),
        "{} import circle(s) between {kind} in src/:\n{}",
        found.len(),
        listed.join("\n")
    );
}

#[test]
fn no_import_circles_between_files() {
    fail_on_cycles("files", &file_edges(&src()), ALLOWED_FILE_CIRCLES);
}

#[test]
fn no_import_circles_between_top_level_folders() {
    fail_on_cycles("top-level folders", &folder_edges(&file_edges(&src())), &[]);
}

/// The detector on a made-up crate: a cycle through `super::`, a use tree, a path inside a macro
/// and a test module is found, and comments, strings and a parent naming its child are not edges.
#[test]
fn the_detector_sees_the_circles_of_a_small_made_up_crate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write("lib.rs", "pub mod a;\npub mod b;\npub mod c;\nmod d;\n");
    // a/mod.rs names its child (not an edge, even as super:: from its tests) and b by a nested
    // use tree.
    write(
        "a/mod.rs",
        "mod x;\npub use x::X;\nuse crate::{b::{self, inner::Y}};\n\
         #[cfg(test)]\nmod tests { use super::x::X; use crate::a::x; }\n",
    );
    // a/x.rs reaches up with super:: (an edge to a/mod.rs, inside a's folder).
    write(
        "a/x.rs",
        "pub struct X;\nfn f() { let _ = super::helper(); }\n",
    );
    // d.rs names c only through the name its use line binds: `use crate::c as see; see::h()`.
    write("d.rs", "fn k() { see::h(); }\nuse crate::c as see;\n");
    // b.rs: a path inside a macro closes the folder circle a -> b -> a.
    write(
        "b.rs",
        "pub mod inner { pub struct Y; }\nfn g() { println!(\"{}\", crate::a::x::X); }\n",
    );
    // c.rs: only in comments, strings and its own test module's `super::*`.
    write(
        "c.rs",
        "// use crate::a;\n/// [`crate::b`]\nfn h() -> &'static str { \"crate::a::X\" }\n\
         #[cfg(test)]\nmod tests { use super::*; }\n",
    );
    let edges = file_edges(src);
    let pairs: BTreeSet<(String, String)> = edges
        .iter()
        .map(|e| (e.from.clone(), e.to.clone()))
        .collect();
    let expected: BTreeSet<(String, String)> = [
        ("a/mod.rs", "b.rs"),
        ("a/x.rs", "a/mod.rs"),
        ("b.rs", "a/x.rs"),
        ("d.rs", "c.rs"),
    ]
    .iter()
    .map(|(f, t)| (f.to_string(), t.to_string()))
    .collect();
    assert_eq!(pairs, expected, "edges: {edges:#?}");
    assert_eq!(cycles(&edges), vec![vec!["a/mod.rs", "a/x.rs", "b.rs"]]);
    assert_eq!(cycles(&folder_edges(&edges)), vec![vec!["a", "b"]]);
    let listed = describe(&cycles(&edges)[0], &edges);
    assert!(
        listed.contains("b.rs -> a/x.rs   (b.rs:2 a::x::X)"),
        "{listed}"
    );
    // Two separate circles are two entries; a chain is none.
    let edge = |from: &str, to: &str| Edge {
        from: from.into(),
        to: to.into(),
        at: String::new(),
        path: String::new(),
    };
    let two = [
        edge("p", "q"),
        edge("q", "p"),
        edge("r", "s"),
        edge("s", "t"),
        edge("t", "r"),
    ];
    assert_eq!(cycles(&two), vec![vec!["p", "q"], vec!["r", "s", "t"]]);
    assert!(cycles(&[edge("p", "q"), edge("q", "r")]).is_empty());
}
