//! Errors that navigate: every failure names the next thing to try.

/// Commands models reach for that cannot work here, and what to do instead.
const UNAVAILABLE_HINTS: &[(&str, &str)] = &[
    ("pip", "packages cannot be installed here (no network); use what is already available"),
    ("pip3", "packages cannot be installed here (no network); use what is already available"),
    ("sudo", "there is no sudo here; run the command itself, without sudo"),
    ("su", "there is no su here; run the command itself"),
    ("apt", "system packages cannot be installed here; use the commands listed above"),
    ("apt-get", "system packages cannot be installed here; use the commands listed above"),
    ("yum", "system packages cannot be installed here; use the commands listed above"),
    ("brew", "system packages cannot be installed here; use the commands listed above"),
];

/// Phrases with which standard tools report a bad command line.
const USAGE_PHRASES: &[&str] = &[
    "usage:",
    "missing operand",
    "missing file operand",
    "invalid option",
    "unrecognized option",
    "unknown option",
    "option requires an argument",
    "no pattern",
    "missing argument",
];

/// `[error] unknown command: foo`, the nearest names, the sorted list of
/// what exists and, for a few well-known names, what works here instead.
pub fn unknown_command_message(name: &str, available: &[String]) -> String {
    let mut sorted: Vec<&str> = available.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut msg = format!("[error] unknown command: {name}\n");
    if let Some((_, hint)) = UNAVAILABLE_HINTS.iter().find(|(n, _)| *n == name) {
        msg.push_str(&format!("hint: {hint}\n"));
    }
    let near = did_you_mean(name, &sorted);
    if !near.is_empty() {
        msg.push_str(&format!("did you mean: {}?\n", near.join(", ")));
    }
    msg.push_str(&format!("Available: {}\n", sorted.join(", ")));
    msg
}

/// Up to three names closest to `name`: those at the smallest edit distance
/// (transpositions count as one edit), plus names that extend it.
pub fn did_you_mean<'a>(name: &str, candidates: &[&'a str]) -> Vec<&'a str> {
    let limit = if name.chars().count() <= 3 { 1 } else { 2 };
    let scored: Vec<(usize, &str)> = candidates
        .iter()
        .map(|c| {
            let prefix = name.len() >= 3 && c.starts_with(name) && *c != name;
            (if prefix { 1 } else { edit_distance(name, c) }, *c)
        })
        .filter(|(d, _)| *d <= limit)
        .collect();
    let Some(best) = scored.iter().map(|(d, _)| *d).min() else {
        return Vec::new();
    };
    let mut nearest: Vec<&str> = scored.into_iter().filter(|(d, _)| *d == best).map(|(_, c)| c).collect();
    nearest.sort_unstable();
    nearest.truncate(3);
    nearest
}

/// `try: grep --help` when a failed command's stderr reads like a usage error.
pub fn usage_error_hint(command: &str, exit_code: i32, stderr: &str) -> Option<String> {
    if exit_code == 0 || command.is_empty() {
        return None;
    }
    let lower = stderr.to_lowercase();
    USAGE_PHRASES.iter().any(|p| lower.contains(p)).then(|| format!("try: {command} --help"))
}

/// Optimal-string-alignment distance: Levenshtein plus adjacent transpositions.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for j in 0..=b.len() {
        d[0][j] = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j - 1] + cost).min(d[i - 1][j] + 1).min(d[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn did_you_mean_table() {
        let pool = ["cat", "grep", "egrep", "head", "help", "write", "wc"];
        let cases: [(&str, &[&str]); 7] = [
            ("gerp", &["grep"]),
            ("grpe", &["grep"]),
            ("hlep", &["help"]),
            ("hea", &["head"]),
            ("wirte", &["write"]),
            ("zzzzzz", &[]),
            ("ca", &["cat"]),
        ];
        for (name, want) in cases {
            assert_eq!(did_you_mean(name, &pool), want, "{name}");
        }
    }

    #[test]
    fn unknown_command_lists_sorted_names_and_nearest() {
        let msg = unknown_command_message("gerp", &names(&["wc", "grep", "cat", "grep"]));
        assert_eq!(msg, "[error] unknown command: gerp\ndid you mean: grep?\nAvailable: cat, grep, wc\n");
    }

    #[test]
    fn unavailable_tools_get_a_hint() {
        for name in ["pip", "sudo", "apt", "apt-get"] {
            let msg = unknown_command_message(name, &names(&["cat"]));
            assert!(msg.contains("\nhint: "), "{name}: {msg}");
        }
    }

    #[test]
    fn usage_hint_table() {
        let cases = [
            ("grep", 2, "grep: usage: grep [OPTION]... PATTERNS\n", Some("try: grep --help")),
            ("cp", 1, "cp: missing file operand\n", Some("try: cp --help")),
            ("ls", 2, "ls: invalid option -- 'z'\n", Some("try: ls --help")),
            ("cat", 1, "cat: nope.txt: No such file or directory\n", None),
            ("grep", 0, "usage: whatever\n", None),
        ];
        for (cmd, code, stderr, want) in cases {
            assert_eq!(usage_error_hint(cmd, code, stderr).as_deref(), want, "{stderr}");
        }
    }
}
