//! What fio does to a job file's text before it parses options: `include
//! FILE` lines replaced by that file's text (relative to the including
//! file's directory, nested up to a depth), and `${NAME}` replaced by the
//! environment variable NAME (empty when unset, as fio does; a job that then
//! lacks a value fails to parse, as in fio). Pure: the caller supplies the
//! environment and the file reader, so the engine stays deterministic and
//! testable.

use std::path::{Path, PathBuf};

/// How deep includes may nest (a file including itself is an error well
/// before this).
const MAX_INCLUDE_DEPTH: usize = 16;

/// `text` (the file `file`) with its includes and `${NAME}`s expanded;
/// `env` looks a variable up, `read` reads an included file. Errors name
/// the file and line.
pub fn expand(
    text: &str,
    file: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    read: &dyn Fn(&Path) -> Result<String, String>,
) -> Result<String, String> {
    expand_at(text, file, env, read, 0)
}

fn expand_at(
    text: &str,
    file: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    read: &dyn Fn(&Path) -> Result<String, String>,
    depth: usize,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.lines().enumerate() {
        let at = || format!("{}:{}", file.display(), i + 1);
        if let Some(rest) = line.trim().strip_prefix("include") {
            if rest.starts_with(char::is_whitespace) {
                let name = rest.trim();
                if depth >= MAX_INCLUDE_DEPTH {
                    return Err(format!(
                        "{}: include {name}: includes nested more than {MAX_INCLUDE_DEPTH} deep (does a file include itself?)",
                        at()
                    ));
                }
                let path = included_path(file, name);
                let inner = read(&path).map_err(|e| format!("{}: include {name}: {e}", at()))?;
                out.push_str(&expand_at(&inner, &path, env, read, depth + 1)?);
                continue;
            }
        }
        out.push_str(&substitute(line, env).map_err(|e| format!("{}: {e}", at()))?);
        out.push('\n');
    }
    Ok(out)
}

/// An include's path: as written when absolute, else beside the including file.
fn included_path(file: &Path, name: &str) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        file.parent().unwrap_or(Path::new("")).join(p)
    }
}

/// `line` with every `${NAME}` replaced by the variable's value (empty when unset).
fn substitute(line: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`${{` without a closing `}}` in {line:?}"))?;
        let name = &after[..end];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`${{{name}}}` is not a variable name"));
        }
        out.push_str(&env(name).unwrap_or_default());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "DEV" => Some("zn540".into()),
            "BS" => Some("64k".into()),
            _ => None,
        }
    }

    fn no_files(p: &Path) -> Result<String, String> {
        Err(format!("{}: no such file", p.display()))
    }

    #[test]
    fn variables_are_replaced_and_unset_ones_are_empty_as_in_fio() {
        let t = expand(
            "[w]\nfilename=${DEV}\nbs=${BS}\nsize=${SIZE}\n",
            Path::new("j.fio"),
            &env,
            &no_files,
        )
        .unwrap();
        assert_eq!(t, "[w]\nfilename=zn540\nbs=64k\nsize=\n");
        let e = expand("bs=${BS\n", Path::new("j.fio"), &env, &no_files).unwrap_err();
        assert!(e.starts_with("j.fio:1:"), "{e}");
        assert!(expand("bs=${}\n", Path::new("j.fio"), &env, &no_files).is_err());
    }

    #[test]
    fn includes_are_read_beside_the_including_file_and_nest() {
        let read = |p: &Path| -> Result<String, String> {
            match p.to_str().unwrap() {
                "dir/common.fio" => Ok("[global]\nfilename=${DEV}\ninclude more.fio\n".into()),
                "dir/more.fio" => Ok("direct=1\n".into()),
                "dir/self.fio" => Ok("include self.fio\n".into()),
                _ => Err("no such file".into()),
            }
        };
        let t = expand(
            "include common.fio\n[w]\nrw=write\n",
            Path::new("dir/job.fio"),
            &env,
            &read,
        )
        .unwrap();
        assert_eq!(t, "[global]\nfilename=zn540\ndirect=1\n[w]\nrw=write\n");
        let e = expand("include nope.fio\n", Path::new("dir/job.fio"), &env, &read).unwrap_err();
        assert!(
            e.contains("dir/job.fio:1: include nope.fio: no such file"),
            "{e}"
        );
        let e = expand("include self.fio\n", Path::new("dir/job.fio"), &env, &read).unwrap_err();
        assert!(e.contains("nested"), "{e}");
        // an option whose name starts with "include" is not an include
        let t = expand("includes=1\n", Path::new("j.fio"), &env, &no_files).unwrap();
        assert_eq!(t, "includes=1\n");
    }
}
