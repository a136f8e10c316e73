//! The dotted key path at a position of a TOML text, for parse errors that the TOML
//! parser reports with a position but no key (e.g. an integer above 2⁶³−1: "number too
//! large to fit in target type"). A line scan, not a parser: it understands table
//! headers (`[a.b]`, `[[flow]]` → `flow[2]`), `key = value` lines and, inside an inline
//! table on that line, the nearest `key =` before the position.

/// The key path at byte `offset` of `text` (`run.seed`, `flow[1].rate`,
/// `dumbbell.qdisc.limit`), or None if no key precedes it on its line.
pub fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let offset = (0..=offset).rev().find(|&i| text.is_char_boundary(i))?;
    let line_start = text[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let mut table = String::new();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for line in text[..line_start].lines() {
        let l = line.trim();
        if let Some(name) = l.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = clean_key(name);
            let n = match counts.iter_mut().find(|(k, _)| *k == name) {
                Some((_, c)) => {
                    *c += 1;
                    *c - 1
                }
                None => {
                    counts.push((name.clone(), 1));
                    0
                }
            };
            table = format!("{name}[{n}]");
        } else if let Some(name) = l.strip_prefix('[').and_then(|r| r.split(']').next()) {
            let name = clean_key(name);
            // `[flow.tcp]` after `[[flow]]` belongs to the last flow
            table = match counts
                .iter()
                .find(|(k, _)| name.starts_with(&format!("{k}.")))
            {
                Some((k, c)) => format!("{k}[{}]{}", c - 1, &name[k.len()..]),
                None => name,
            };
        }
    }
    let before = &text[line_start..offset];
    let eq = before.find('=')?;
    let first = clean_key(&before[..eq]);
    if first.is_empty() || first.contains(['[', '{', '"', '\'']) {
        return None;
    }
    let mut path = if table.is_empty() {
        first
    } else {
        format!("{table}.{first}")
    };
    // an inline table: the nearest `key =` before the position, if it is not the first
    let rest = &before[eq + 1..];
    if rest.contains('{') {
        if let Some(e) = rest.rfind('=') {
            let head = &rest[..e];
            let start = head.rfind(['{', ',']).map(|i| i + 1).unwrap_or(0);
            let inner = clean_key(&head[start..]);
            if !inner.is_empty() && !inner.contains(['[', '{', '}', '"', '\'']) {
                // keys of enclosing inline tables between the first key and this one
                let mut mid = Vec::new();
                let mut depth_keys: Vec<String> = Vec::new();
                let mut last_key = String::new();
                let mut tok = String::new();
                for c in rest[..start].chars() {
                    match c {
                        '=' => {
                            last_key = clean_key(&tok);
                            tok.clear();
                        }
                        '{' => {
                            depth_keys.push(last_key.clone());
                            tok.clear();
                        }
                        '}' => {
                            depth_keys.pop();
                            tok.clear();
                        }
                        ',' => tok.clear(),
                        _ => tok.push(c),
                    }
                }
                // the outermost `{` belongs to `first`
                for k in depth_keys.into_iter().skip(1) {
                    if !k.is_empty() {
                        mid.push(k);
                    }
                }
                for k in mid {
                    path.push('.');
                    path.push_str(&k);
                }
                path.push('.');
                path.push_str(&inner);
            }
        }
    }
    Some(path)
}

fn clean_key(k: &str) -> String {
    k.split('.')
        .map(|p| p.trim().trim_matches('"').trim_matches('\''))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::key_at;

    fn at(text: &str, needle: &str) -> Option<String> {
        key_at(text, text.find(needle).unwrap())
    }

    #[test]
    fn finds_the_key_of_a_value() {
        let t = "[run]\nseed = 99999999999999999999\n\n[dumbbell]\nqdisc = { kind = \"fifo\", limit = 999999999999999999999 }\n\n[[flow]]\nkind = \"a\"\n[[flow]]\nrate = 1e999\n[flow.tcp]\ncc = 5\n";
        assert_eq!(at(t, "9999999").as_deref(), Some("run.seed"));
        assert_eq!(
            at(t, "999999999999999999999 }").as_deref(),
            Some("dumbbell.qdisc.limit")
        );
        assert_eq!(at(t, "1e999").as_deref(), Some("flow[1].rate"));
        assert_eq!(at(t, "5\n").as_deref(), Some("flow[1].tcp.cc"));
        assert_eq!(
            at("a = { b = { c = 1, d = 7 } }", "7").as_deref(),
            Some("a.b.d")
        );
        assert_eq!(at("[run]\n[x", "[x"), None);
    }
}
