//! Docs: the links of README.md, ARCHITECTURE.md and every docs/*.md lead
//! somewhere. Each Markdown link `[text](target)` and reference definition
//! `[label]: target` outside fenced code blocks whose target is relative
//! (not http(s) or mailto) must name a file that exists, relative to the
//! page that links it; a `#fragment`, on the page itself or on a linked
//! `.md` file, must be the GitHub anchor of one of that file's headings.
//! Also: the README stays a short page for newcomers (under 15,000 bytes),
//! with the reference in docs/.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    lexical(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// `path` with its `.` and `..` applied to the words, not the disk (a
/// link's file may not exist).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` as the repository names it (`docs/agent.md`), for messages.
fn shown(path: &Path) -> String {
    let path = lexical(path);
    path.strip_prefix(root()).unwrap_or(&path).display().to_string()
}

/// The pages checked: README.md, ARCHITECTURE.md and docs/*.md, in order.
fn pages() -> Vec<PathBuf> {
    let root = root();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    let mut pages = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    pages.extend(docs);
    pages
}

/// The lines of `text` outside fenced code blocks, each with its number
/// (from 1). A fence is three or more backticks or tildes, indented or
/// not (a block inside a list item); it closes at a line of at least as
/// many of the same character.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ['`', '~'].into_iter().find_map(|c| {
            let run = trimmed.chars().take_while(|&x| x == c).count();
            (run >= 3).then_some((c, run))
        });
        match (fence, marker) {
            (None, Some(open)) => fence = Some(open),
            (Some((c, len)), Some((m, run))) if c == m && run >= len && trimmed[run..].trim().is_empty() => {
                fence = None
            }
            (None, None) => out.push((n + 1, line)),
            _ => {}
        }
    }
    out
}

/// `line` with its inline code spans blanked out, so that text shown as
/// code (`jq '.[](x)'`) is never read as a link.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        let closer = "`".repeat(ticks);
        match after.find(&closer) {
            Some(end) => {
                out.push_str(&rest[..start]);
                out.push_str(&" ".repeat(ticks * 2 + end));
                rest = &after[end + ticks..];
            }
            None => {
                out.push_str(&rest[..start + ticks]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The target of an inline link whose `(` is at the start of `rest`: up to
/// the matching `)`, without a title (`"…"`) or angle brackets.
fn inline_target(rest: &str) -> Option<String> {
    let mut depth = 0usize;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    let inside = rest[1..i].trim();
                    if let Some(angled) = inside.strip_prefix('<') {
                        return angled.split('>').next().map(str::to_string);
                    }
                    return inside.split_whitespace().next().map(str::to_string);
                }
            }
            _ => {}
        }
    }
    None
}

/// Every link target of `text` outside code, with its line number:
/// inline links and images (`[text](target)`) and reference definitions
/// (`[label]: target`; footnotes `[^n]:` are not links).
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(text) {
        let line = without_code_spans(line);
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        let definition = trimmed.find(']').filter(|&close| trimmed[close + 1..].starts_with(':'));
        if let Some(close) =
            definition.filter(|_| indent <= 3 && trimmed.starts_with('[') && !trimmed.starts_with("[^"))
            && let Some(target) = trimmed[close + 2..].split_whitespace().next()
        {
            out.push((n, target.trim_start_matches('<').trim_end_matches('>').to_string()));
            continue;
        }
        let mut from = 0;
        while let Some(at) = line[from..].find("](") {
            let open = from + at + 1;
            if let Some(target) = inline_target(&line[open..]) {
                out.push((n, target));
            }
            from = open;
        }
    }
    out
}

/// A heading's text as GitHub anchors it: inline links reduced to their
/// text, lowercase, every character but letters, digits, `-` and `_`
/// dropped (backticks and other punctuation included), each space a `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    while let Some(at) = rest.find("](") {
        text.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let skip = inline_target(after).map(|_| after.find(')').map_or(after.len(), |c| c + 1)).unwrap_or(0);
        rest = &after[skip..];
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of `text`'s headings (ATX `## …` and setext underlines)
/// outside code: a heading seen before gets `-1`, then `-2`, as on GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut headings = Vec::new();
    let mut previous: Option<&str> = None;
    for (_, line) in prose_lines(text) {
        let trimmed = line.trim();
        let indent = line.len() - line.trim_start().len();
        let hashes = trimmed.chars().take_while(|&c| c == '#').count();
        if indent <= 3 && (1..=6).contains(&hashes) && trimmed[hashes..].starts_with([' ', '\t']) {
            let title = trimmed[hashes..].trim().trim_end_matches('#').trim_end();
            headings.push(title.to_string());
            previous = None;
            continue;
        }
        let underline = !trimmed.is_empty()
            && indent <= 3
            && (trimmed.chars().all(|c| c == '=') || (trimmed.len() >= 2 && trimmed.chars().all(|c| c == '-')));
        match previous {
            Some(title) if underline => {
                headings.push(title.to_string());
                previous = None;
            }
            _ => {
                let paragraph = !trimmed.is_empty()
                    && !trimmed.starts_with(['-', '*', '+', '|', '>', '<'])
                    && !trimmed.starts_with(|c: char| c.is_ascii_digit());
                previous = paragraph.then_some(trimmed);
            }
        }
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for heading in headings {
        let base = slug(&heading);
        let count = seen.entry(base.clone()).or_insert(0);
        out.insert(if *count == 0 { base.clone() } else { format!("{base}-{count}") });
        *count += 1;
    }
    out
}

/// `%XX` escapes of a link's path decoded (`my%20file.md`).
fn percent_decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What is wrong with `target` as linked from `page`, if anything.
fn problem(page: &Path, target: &str) -> Option<String> {
    let lower = target.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:") {
        return None;
    }
    if target.contains("://") {
        return Some(format!("`{target}`: a scheme other than http(s) or mailto"));
    }
    let (path, fragment) = target.split_once('#').map_or((target, None), |(p, f)| (p, Some(f)));
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        page.parent().expect("a page's folder").join(percent_decoded(path))
    };
    if !file.exists() {
        return Some(format!("`{target}`: no file {}", shown(&file)));
    }
    let fragment = fragment?;
    if file.extension().is_none_or(|e| e != "md") {
        return None; // a source file's #L10, or an anchor GitHub makes elsewhere
    }
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let anchors = anchors(&text);
    (!anchors.contains(&percent_decoded(fragment).to_lowercase()))
        .then(|| format!("`{target}`: no heading of {} has the anchor #{fragment}", shown(&file)))
}

/// Every relative link of the README, ARCHITECTURE.md and docs/ leads to a
/// file that exists, and every `#fragment` to a heading of its file.
#[test]
fn every_relative_link_leads_to_a_file_and_a_heading() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        let name = shown(&page);
        for (line, target) in links(&text) {
            checked += 1;
            if let Some(problem) = problem(&page, &target) {
                failures.push(format!("{name}:{line}: {problem}"));
            }
        }
    }
    assert!(checked > 50, "only {checked} links found: is the link parser broken?");
    assert!(failures.is_empty(), "{} broken links:\n{}", failures.len(), failures.join("\n"));
}

/// The README is the newcomer's page: install, the two commands, a tour.
/// Reference text goes to docs/.
#[test]
fn the_readme_stays_short() {
    let size = std::fs::metadata(root().join("README.md")).expect("README.md").len();
    assert!(size < 15_000, "README.md is {size} bytes; keep it under 15,000 and move reference text to docs/");
}

/// The parts the two tests rest on, on small inputs.
#[test]
fn links_and_anchors_are_read_as_github_reads_them() {
    assert_eq!(slug("Other machines: `clip`"), "other-machines-clip");
    assert_eq!(slug("7. Evals on many machines: `--shard` and `merge`"), "7-evals-on-many-machines---shard-and-merge");
    assert_eq!(slug("Seeing and undoing changes; modes"), "seeing-and-undoing-changes-modes");
    assert_eq!(slug("The [`run`](run.md) contract"), "the-run-contract");
    assert_eq!(slug("max_bytes and Ünïcode"), "max_bytes-and-ünïcode");
    let page = "# A\n\n## A\n\n```sh\n# not a heading\n[x](gone.md)\n```\n\nB\n===\n\n## A\n";
    let want: BTreeSet<String> = ["a", "a-1", "a-2", "b"].into_iter().map(String::from).collect();
    assert_eq!(anchors(page), want);
    let text = "see [a](a.md#x) and ![i](img.png \"t\")\n`[no](code.md)` [f(x)](f.md)\n[label]: ../b.md\n\
                ```\n[no](fenced.md)\n```\n  ```text\n  [no](indented.md)\n  ```\n[^1]: a footnote\n";
    let found: Vec<(usize, String)> = links(text);
    let want: Vec<(usize, String)> =
        [(1, "a.md#x"), (1, "img.png"), (2, "f.md"), (3, "../b.md")].into_iter().map(|(n, t)| (n, t.into())).collect();
    assert_eq!(found, want);
}
