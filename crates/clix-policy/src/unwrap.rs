//! Every command one argv runs: itself, and whatever it wraps.
//!
//! `timeout 5 nice -n 3 rm -rf /` runs `timeout`, `nice` and `rm`; `xargs
//! rm -rf` runs `rm -rf` on what it reads; `find / -exec rm -rf {} \;` runs
//! `rm -rf /` first. A rule is checked on each of them, so no wrapper hides
//! the command inside it.

use crate::words::basename;

/// How deep wrappers may nest before the rest is taken as it is.
const MAX_DEPTH: usize = 16;

/// Shells whose `-c` script is read as a line of its own.
pub(crate) const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash"];

/// The script an invocation hands back to a shell: `bash -c S`, `sh -ec S`, `eval WORDS…`.
pub(crate) fn reentry(argv: &[String]) -> Option<String> {
    let program = basename(argv.first()?);
    if program == "eval" {
        return Some(argv[1..].join(" "));
    }
    if !SHELLS.contains(&program) {
        return None;
    }
    let at = argv.iter().skip(1).position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))?;
    argv.get(at + 2).cloned()
}

/// Programs that run another command named in their arguments.
const WRAPPERS: &[&str] = &[
    "env", "command", "builtin", "nohup", "setsid", "time", "exec", "nice", "stdbuf", "ionice", "sudo", "doas",
    "timeout", "xargs", "find",
];

/// Whether `program` (a basename) runs only itself: not a wrapper, no script handed to a
/// shell. Most commands are, and need no look inside.
pub(crate) fn runs_only_itself(program: &str) -> bool {
    !WRAPPERS.contains(&program) && !SHELLS.contains(&program) && program != "eval"
}

/// `argv` and every command it wraps, outermost first.
pub(crate) fn invocations(argv: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    collect(argv.to_vec(), &mut out, 0);
    out
}

fn collect(argv: Vec<String>, out: &mut Vec<Vec<String>>, depth: usize) {
    if argv.is_empty() || depth > MAX_DEPTH {
        return;
    }
    let inner = wrapped(&argv);
    out.push(argv);
    for command in inner {
        collect(command, out, depth + 1);
    }
}

/// The commands `argv` runs itself, if its program is a wrapper.
fn wrapped(argv: &[String]) -> Vec<Vec<String>> {
    let args = &argv[1..];
    let rest = |at: Option<usize>| at.map(|i| args[i..].to_vec()).into_iter().filter(|a| !a.is_empty()).collect();
    match basename(&argv[0]) {
        "env" => env_command(args).into_iter().collect(),
        "command" => rest(skip_options(args, "", &[])),
        "builtin" | "nohup" | "setsid" => rest(skip_options(args, "", &[])),
        "time" => rest(skip_options(args, "fo", &["format", "output"])),
        "exec" => rest(skip_options(args, "a", &[])),
        "nice" => rest(skip_options(args, "n", &["adjustment"])),
        "stdbuf" => rest(skip_options(args, "ioe", &["input", "output", "error"])),
        "ionice" => rest(skip_options(args, "cnp", &["class", "classdata", "pid"])),
        "sudo" => rest(skip_options(args, "ugCDhprtUT", &["user", "group", "chdir", "host", "prompt", "role", "type"])),
        "doas" => rest(skip_options(args, "uC", &[])),
        // The first operand is the duration.
        "timeout" => rest(skip_options(args, "sk", &["signal", "kill-after"]).map(|i| i + 1)),
        "xargs" => rest(skip_options(
            args,
            "adEILnPs",
            &[
                "arg-file",
                "delimiter",
                "eof",
                "replace",
                "max-lines",
                "max-args",
                "max-procs",
                "max-chars",
                "process-slot-var",
            ],
        ))
        .into_iter()
        .chain(std::iter::once(vec!["echo".to_string()]))
        .take(1)
        .collect(),
        "find" => find_commands(args),
        _ => Vec::new(),
    }
}

/// Index of the wrapped command's first word in `args`: past options
/// (`-x`, `-xVALUE`, `-x VALUE` for the letters in `with_value`,
/// `--name=VALUE`, `--name VALUE` for the names in `long_with_value`) and a
/// `--`. `None` when nothing is left.
fn skip_options(args: &[String], with_value: &str, long_with_value: &[&str]) -> Option<usize> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "--" {
            i += 1;
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            i += if !long.contains('=') && long_with_value.contains(&long) { 2 } else { 1 };
        } else if arg.len() > 1 && arg.starts_with('-') {
            let letter = arg[1..].chars().next().unwrap_or('-');
            let attached = arg.len() > 2;
            i += if with_value.contains(letter) && !attached { 2 } else { 1 };
        } else {
            break;
        }
    }
    (i < args.len()).then_some(i)
}

/// `env`'s command: past options, `NAME=value` words and `-S`'s split string.
fn env_command(args: &[String]) -> Option<Vec<String>> {
    let mut i = 0;
    let mut split: Vec<String> = Vec::new();
    while let Some(arg) = args.get(i) {
        if arg == "--" {
            i += 1;
            break;
        }
        if let Some(string) =
            arg.strip_prefix("--split-string=").or_else(|| arg.strip_prefix("-S").filter(|s| !s.is_empty()))
        {
            split.extend(string.split_whitespace().map(String::from));
            i += 1;
        } else if arg == "-S" || arg == "--split-string" {
            split.extend(
                args.get(i + 1).map(|s| s.split_whitespace().map(String::from).collect::<Vec<_>>()).unwrap_or_default(),
            );
            i += 2;
        } else if matches!(arg.as_str(), "-u" | "-C" | "--unset" | "--chdir") {
            i += 2;
        } else if (arg.starts_with('-') && arg.len() > 1) || arg.contains('=') {
            // A flag, or NAME=value.
            i += 1;
        } else {
            break;
        }
    }
    split.extend(args.iter().skip(i).cloned());
    (!split.is_empty()).then_some(split)
}

/// The commands of `find`'s `-exec`, `-execdir`, `-ok` and `-okdir`, with
/// `{}` standing for each starting point (the first thing find hands them).
fn find_commands(args: &[String]) -> Vec<Vec<String>> {
    let mut i = 0;
    // Leading options: -H -L -P, -D debugopts, -Olevel.
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            a if a.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let mut roots: Vec<&str> = Vec::new();
    while let Some(arg) = args.get(i) {
        if arg.starts_with('-') || arg == "(" || arg == "!" {
            break;
        }
        roots.push(arg);
        i += 1;
    }
    if roots.is_empty() {
        roots.push(".");
    }
    let mut out = Vec::new();
    while i < args.len() {
        if matches!(args[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let end = args[i + 1..].iter().position(|a| a == ";" || a == "+").map_or(args.len(), |p| i + 1 + p);
            let template = &args[i + 1..end];
            if !template.is_empty() {
                for root in &roots {
                    out.push(template.iter().map(|w| w.replace("{}", root)).collect());
                }
            }
            i = end;
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::invocations;

    fn argv(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    fn innermost(line: &str) -> Vec<String> {
        invocations(&argv(line)).pop().unwrap_or_default()
    }

    #[test]
    fn wrappers_are_looked_through() {
        for (line, inner) in [
            ("env rm -rf /", "rm -rf /"),
            ("env -i FOO=1 BAR=2 rm -rf /", "rm -rf /"),
            ("env -u HOME -- rm -rf /", "rm -rf /"),
            ("command -p rm -rf /", "rm -rf /"),
            ("builtin rm x", "rm x"),
            ("exec -a name rm -rf /", "rm -rf /"),
            ("nice -n 5 rm -rf /", "rm -rf /"),
            ("nice -5 rm -rf /", "rm -rf /"),
            ("nohup rm -rf /", "rm -rf /"),
            ("timeout 5 rm -rf /", "rm -rf /"),
            ("timeout -s KILL -k 1 5s rm -rf /", "rm -rf /"),
            ("timeout --signal=TERM 5 rm -rf /", "rm -rf /"),
            ("stdbuf -oL rm -rf /", "rm -rf /"),
            ("stdbuf -o L rm -rf /", "rm -rf /"),
            ("time -p rm -rf /", "rm -rf /"),
            ("sudo -u root -E rm -rf /", "rm -rf /"),
            ("sudo nice timeout 3 /bin/rm -rf /", "/bin/rm -rf /"),
            ("xargs rm -rf", "rm -rf"),
            ("xargs -0 -n 1 -P 4 rm -rf", "rm -rf"),
            ("xargs -I {} rm -rf {}", "rm -rf {}"),
            ("xargs", "echo"),
            ("find / -exec rm -rf {} ;", "rm -rf /"),
            ("find -L /srv -name x -execdir rm -rf {} +", "rm -rf /srv"),
            ("find . -ok rm {} ;", "rm ."),
        ] {
            assert_eq!(innermost(line), argv(inner), "{line}");
        }
        let split = invocations(&["env".into(), "-S".into(), "rm -rf".into(), "/".into()]);
        assert_eq!(split.last(), Some(&argv("rm -rf /")), "env -S splits its string");
        assert_eq!(invocations(&argv("timeout 5")).len(), 1, "a wrapper with nothing to run is itself only");
        assert_eq!(invocations(&argv("ls -la")), vec![argv("ls -la")]);
    }

    #[test]
    fn find_gives_one_command_per_root_and_exec() {
        let all = invocations(&argv("find a b -exec rm {} ; -exec touch {}/x ;"));
        assert_eq!(all.len(), 5);
        assert!(all.contains(&argv("touch b/x")));
    }
}
