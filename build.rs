//! Records the git commit the binary was built from, for meta.json and `--version`, and collects the doc comments
//! of every struct's fields in src/ so datapackage.json describes each CSV column in the words of
//! its row type (`record::docs`), with nothing written twice.
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let run = |args: &[&str]| {
        Command::new("git")
            .args(args)
            // `git status` would otherwise refresh .git/index, which this script watches: the next
            // cargo command (run_all.sh's nextest after its build) rebuilt ratelab for nothing.
            .env("GIT_OPTIONAL_LOCKS", "0")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = run(&["rev-parse", "HEAD"]).map(|commit| {
        let dirty =
            run(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        let suffix = if dirty { "-dirty" } else { "" };
        format!("{commit}{suffix}")
    });
    if let Some(commit) = &commit {
        println!("cargo:rustc-env=RATELAB_GIT_COMMIT={commit}");
    }
    let version = env!("CARGO_PKG_VERSION");
    let shown = commit
        .as_deref()
        .unwrap_or("unknown (built outside a git checkout)");
    println!("cargo:rustc-env=RATELAB_VERSION={version} (commit {shown})");
    // Where git keeps them: in a worktree `.git` is a file and HEAD, the index and refs live
    // elsewhere; a missing path would rerun this script on every build.
    let mut watched = vec![
        "HEAD".to_string(),
        "index".to_string(),
        "packed-refs".to_string(),
    ];
    watched.extend(run(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = run(&["rev-parse", "--git-path", &name]) {
            if Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    println!("cargo:rerun-if-changed=src");
    let mut found = Found::default();
    collect(Path::new("src"), &mut found);
    found.rows.sort();
    found.params.sort();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("row_docs.rs"), render(&found.rows)).expect("writing row_docs.rs");
    let types = render_param_types(&found.params);
    std::fs::write(out.join("param_types.rs"), types).expect("writing param_types.rs");
}

/// What the walk over src/ collects.
#[derive(Default)]
struct Found {
    rows: Vec<RowDoc>,
    /// Every experiment's `Params` struct: its path and each field's name and Rust type, so
    /// `ratelab params` shows the types the parameter file is read into.
    params: Vec<(String, Vec<(String, String)>)>,
}

/// One struct: its full path (as `std::any::type_name` spells it), its doc, and its fields' docs
/// by serialized name.
type RowDoc = (String, String, Vec<(String, String)>);

fn collect(dir: &Path, found: &mut Found) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "bin") {
                collect(&path, found);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("src/main.rs") {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            // A file that does not parse is the compiler's to report, not ours.
            if let Ok(file) = syn::parse_file(&text) {
                items(&module_path(&path), &file.items, found);
            }
        }
    }
}

/// `src/experiments/race/rows.rs` -> `ratelab::experiments::race::rows`.
fn module_path(file: &Path) -> String {
    let mut parts = vec!["ratelab".to_string()];
    let rel = file.strip_prefix("src").unwrap_or(file).with_extension("");
    for part in rel.iter() {
        let part = part.to_string_lossy();
        if part != "mod" && part != "lib" {
            parts.push(part.into_owned());
        }
    }
    parts.join("::")
}

fn items(module: &str, list: &[syn::Item], found: &mut Found) {
    for item in list {
        match item {
            syn::Item::Struct(s) => {
                if let syn::Fields::Named(named) = &s.fields {
                    if s.ident == "Params" {
                        let types = (named.named.iter())
                            .filter_map(|f| {
                                let ident = f.ident.as_ref()?.to_string();
                                let name = serde_rename(&f.attrs).unwrap_or(ident);
                                Some((name, type_text(&f.ty)))
                            })
                            .collect();
                        found.params.push((format!("{module}::{}", s.ident), types));
                    }
                    let fields = (named.named.iter())
                        .filter_map(|f| {
                            let ident = f.ident.as_ref()?.to_string();
                            let name = serde_rename(&f.attrs).unwrap_or(ident);
                            Some((name, doc(&f.attrs)))
                        })
                        .filter(|(_, d)| !d.is_empty())
                        .collect();
                    found
                        .rows
                        .push((format!("{module}::{}", s.ident), doc(&s.attrs), fields));
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    items(&format!("{module}::{}", m.ident), inner, found);
                }
            }
            _ => {}
        }
    }
}

/// A field's type as written, without paths: `Vec<Strategy>`, `Option<u64>`, `(u64, u64)`.
fn type_text(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => match p.path.segments.last() {
            Some(last) => {
                let args: Vec<String> = match &last.arguments {
                    syn::PathArguments::AngleBracketed(a) => (a.args.iter())
                        .filter_map(|arg| match arg {
                            syn::GenericArgument::Type(t) => Some(type_text(t)),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                match args.is_empty() {
                    true => last.ident.to_string(),
                    false => format!("{}<{}>", last.ident, args.join(", ")),
                }
            }
            None => "?".into(),
        },
        syn::Type::Tuple(t) => {
            let parts: Vec<String> = t.elems.iter().map(type_text).collect();
            format!("({})", parts.join(", "))
        }
        syn::Type::Array(a) => format!("[{}]", type_text(&a.elem)),
        syn::Type::Reference(r) => type_text(&r.elem),
        _ => "?".into(),
    }
}

/// The `///` lines of an item, joined into one paragraph.
fn doc(attrs: &[syn::Attribute]) -> String {
    let lines: Vec<String> = (attrs.iter())
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value().trim().to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    lines.join(" ").trim().to_string()
}

/// `#[serde(rename = "x")]` on a field: the column it writes.
fn serde_rename(attrs: &[syn::Attribute]) -> Option<String> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                let value: syn::LitStr = meta.value()?.parse()?;
                found = Some(value.value());
            } else if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    found
}

fn render(rows: &[RowDoc]) -> String {
    let mut out = String::from("// Generated by build.rs from the doc comments in src/.\n");
    out.push_str("pub static ROW_DOCS: &[RowDoc] = &[\n");
    for (path, doc, fields) in rows {
        out.push_str(&format!(
            "    RowDoc {{ path: {path:?}, doc: {doc:?}, fields: &["
        ));
        for (name, doc) in fields {
            out.push_str(&format!("({name:?}, {doc:?}), "));
        }
        out.push_str("] },\n");
    }
    out.push_str("];\n");
    out
}

fn render_param_types(params: &[(String, Vec<(String, String)>)]) -> String {
    let mut out = String::from("// Generated by build.rs from the Params structs in src/.\n");
    out.push_str("pub static PARAM_TYPES: &[(&str, &[(&str, &str)])] = &[\n");
    for (path, fields) in params {
        out.push_str(&format!("    ({path:?}, &["));
        for (name, ty) in fields {
            out.push_str(&format!("({name:?}, {ty:?}), "));
        }
        out.push_str("]),\n");
    }
    out.push_str("];\n");
    out
}
