//! Records the git commit the binary was built from, for meta.json, and collects the doc comments
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
    if let Some(commit) = run(&["rev-parse", "HEAD"]) {
        let dirty =
            run(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        let suffix = if dirty { "-dirty" } else { "" };
        println!("cargo:rustc-env=RATELAB_GIT_COMMIT={commit}{suffix}");
    }
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
    println!("cargo:rerun-if-changed=src");
    let mut rows = Vec::new();
    collect(Path::new("src"), &mut rows);
    rows.sort();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("row_docs.rs"), render(&rows)).expect("writing row_docs.rs");
}

/// One struct: its full path (as `std::any::type_name` spells it), its doc, and its fields' docs
/// by serialized name.
type RowDoc = (String, String, Vec<(String, String)>);

fn collect(dir: &Path, rows: &mut Vec<RowDoc>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "bin") {
                collect(&path, rows);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("src/main.rs") {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            // A file that does not parse is the compiler's to report, not ours.
            if let Ok(file) = syn::parse_file(&text) {
                items(&module_path(&path), &file.items, rows);
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

fn items(module: &str, list: &[syn::Item], rows: &mut Vec<RowDoc>) {
    for item in list {
        match item {
            syn::Item::Struct(s) => {
                if let syn::Fields::Named(named) = &s.fields {
                    let fields = (named.named.iter())
                        .filter_map(|f| {
                            let ident = f.ident.as_ref()?.to_string();
                            let name = serde_rename(&f.attrs).unwrap_or(ident);
                            Some((name, doc(&f.attrs)))
                        })
                        .filter(|(_, d)| !d.is_empty())
                        .collect();
                    rows.push((format!("{module}::{}", s.ident), doc(&s.attrs), fields));
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    items(&format!("{module}::{}", m.ident), inner, rows);
                }
            }
            _ => {}
        }
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
