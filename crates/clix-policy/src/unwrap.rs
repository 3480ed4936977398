//! Every command one argv runs: itself, and whatever it wraps.
//!
//! `timeout 5 nice -n 3 rm -rf /` runs `timeout`, `nice` and `rm`; `xargs
//! rm -rf` runs `rm -rf` on what it reads; `find / -exec rm -rf {} \;` runs
//! `rm -rf /` first. A rule is checked on each of them, so no wrapper hides
//! the command inside it.

use crate::words::{Context, basename};

/// How deep wrappers may nest before the rest is taken as it is.
const MAX_DEPTH: usize = 16;

/// Shells whose `-c` script is read as a line of its own.
pub(crate) const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash"];

/// Programs that hand a string of theirs to a shell: `script -c S`, `su -c
/// S`, `runuser -c S`, `watch WORDS…`.
const SHELL_STRING_RUNNERS: &[&str] = &["script", "su", "runuser", "watch", "flock"];
/// `awk`s, whose `system("…")`, `print | "…"` and `"…" | getline` run a shell.
const AWKS: &[&str] = &["awk", "gawk", "mawk", "nawk", "busybox-awk"];

/// The scripts an invocation hands back to a shell: `bash -c S`, `sh -ec
/// S`, `eval WORDS…`, `sandbox bash S`, `script -qc S`, `watch WORDS…`, an
/// awk program's literal commands, `sed`'s `e COMMAND`, and the text of a
/// script file a shell or `source` is given (read through `ctx`).
pub(crate) fn reentries(argv: &[String], ctx: &Context) -> Vec<String> {
    let Some(first) = argv.first() else { return Vec::new() };
    let program = basename(first);
    match program {
        "eval" => vec![argv[1..].join(" ")],
        "sandbox" if argv.get(1).is_some_and(|a| a == "bash") => argv.get(2).cloned().into_iter().collect(),
        "watch" => skip_options(&argv[1..], "dn", &["interval", "differences"])
            .map(|at| argv[1 + at..].join(" "))
            .into_iter()
            .collect(),
        p if SHELL_STRING_RUNNERS.contains(&p) => {
            long_value(argv, "--command").or_else(|| dash_c(argv)).into_iter().collect()
        }
        "source" | "." => argv.get(1).and_then(|file| ctx.script(file)).into_iter().collect(),
        p if SHELLS.contains(&p) => match dash_c(argv) {
            Some(script) => vec![script],
            None => script_operand(&argv[1..]).and_then(|file| ctx.script(file)).into_iter().collect(),
        },
        p if AWKS.contains(&p) => awk_program(&argv[1..]).map(|text| awk_commands(&text)).unwrap_or_default(),
        "sed" | "gsed" => sed_scripts(&argv[1..]).iter().flat_map(|s| sed_commands(s)).collect(),
        _ => Vec::new(),
    }
}

/// The word after `-c` (or a cluster holding it, `-qc`, `-ec`).
fn dash_c(argv: &[String]) -> Option<String> {
    let at = argv.iter().skip(1).position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))?;
    argv.get(at + 2).cloned()
}

/// The value of the long option `name`, as `name=VALUE` or `name VALUE`.
fn long_value(argv: &[String], name: &str) -> Option<String> {
    argv.iter().enumerate().find_map(|(i, a)| match a.strip_prefix(name) {
        Some("") => argv.get(i + 1).cloned(),
        Some(rest) => rest.strip_prefix('=').map(String::from),
        None => None,
    })
}

/// Whether `argv` is a shell that reads its script from stdin: no `-c`
/// string and no script file (`bash`, `sh -e`, `bash -s`).
pub(crate) fn reads_script_from_stdin(argv: &[String]) -> bool {
    argv.first().is_some_and(|p| SHELLS.contains(&basename(p)))
        && dash_c(argv).is_none()
        && script_operand(&argv[1..]).is_none()
}

/// Programs that run another command named in their arguments.
const WRAPPERS: &[&str] = &[
    "env", "command", "builtin", "nohup", "setsid", "time", "exec", "nice", "stdbuf", "ionice", "sudo", "doas",
    "timeout", "xargs", "find", "sandbox", "hub", "taskset", "unshare", "setpriv", "chrt", "prlimit", "chroot",
    "flock", "nsenter", "strace", "ltrace", "unbuffer", "setarch", "sort",
];

/// Whether `program` (a basename) runs only itself: not a wrapper, no script handed to a
/// shell. Most commands are, and need no look inside.
pub(crate) fn runs_only_itself(program: &str) -> bool {
    !WRAPPERS.contains(&program)
        && !SHELLS.contains(&program)
        && !SHELL_STRING_RUNNERS.contains(&program)
        && !AWKS.contains(&program)
        && !matches!(program, "eval" | "sed" | "gsed" | "source" | ".")
}

/// A shell's script file: its first operand, past options (`-o NAME` and
/// `+o NAME` take one). `None` when it reads its script from stdin.
fn script_operand(args: &[String]) -> Option<&str> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "--" => return args.get(i + 1).map(String::as_str),
            "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file" => i += 2,
            "-s" => return None,
            a if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 => i += 1,
            a => return Some(a),
        }
    }
    None
}

/// An awk invocation's program text: the first operand, unless `-f` names a file.
fn awk_program(args: &[String]) -> Option<String> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "--" => return args.get(i + 1).cloned(),
            "-f" | "--file" => return None,
            "-v" | "-F" | "--assign" | "--field-separator" => i += 2,
            a if a.starts_with("-f") || a.starts_with("--file=") => return None,
            a if a.starts_with('-') && a.len() > 1 => i += 1,
            _ => return Some(arg.clone()),
        }
    }
    None
}

/// The literal commands an awk program runs: `system("…")`, `print … |
/// "…"` and `"…" | getline`, each string as written (a computed one is
/// left to the exec-time check).
fn awk_commands(program: &str) -> Vec<String> {
    let bytes = program.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i;
        let mut text = String::new();
        i += 1;
        while i < bytes.len() && bytes[i] != b'"' {
            if bytes[i] == b'\\' && i + 1 < bytes.len() {
                i += 1;
                text.push(match bytes[i] {
                    b'n' => '\n',
                    b't' => '\t',
                    other => other as char,
                });
            } else {
                text.push(bytes[i] as char);
            }
            i += 1;
        }
        i += 1;
        let before = program[..start].trim_end();
        let after = program.get(i..).unwrap_or("").trim_start();
        let runs = before.ends_with("system(")
            || before.ends_with("system (")
            || before.ends_with('|')
            || after.starts_with('|') && after.trim_start_matches(['|', '&']).trim_start().starts_with("getline");
        if runs {
            out.push(text);
        }
    }
    out
}

/// A sed invocation's scripts: `-e S`, `--expression=S`, else the first operand.
fn sed_scripts(args: &[String]) -> Vec<String> {
    let mut scripts = Vec::new();
    let mut first_operand = None;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "-e" || arg == "--expression" {
            scripts.extend(args.get(i + 1).cloned());
            i += 2;
            continue;
        }
        if let Some(s) = arg.strip_prefix("--expression=") {
            scripts.push(s.to_string());
        } else if let Some(s) = arg.strip_prefix("-e").filter(|_| !arg.starts_with("--")) {
            scripts.push(s.to_string());
        } else if arg == "-f" || arg == "--file" || arg == "-l" {
            i += 1;
        } else if !arg.starts_with('-') && first_operand.is_none() {
            first_operand = Some(arg.clone());
        }
        i += 1;
    }
    if scripts.is_empty() {
        scripts.extend(first_operand);
    }
    scripts
}

/// The commands of GNU sed's `e COMMAND`, one per script line or `;`-part.
/// (`s///e` runs the pattern space, which only the exec-time check sees.)
fn sed_commands(script: &str) -> Vec<String> {
    script
        .split(['\n', ';'])
        .filter_map(|part| {
            let part = part.trim_start();
            // An address first: a number, `$`, or `/re/`.
            let part = part.trim_start_matches(|c: char| c.is_ascii_digit() || c == '$' || c == ',');
            let command = part.strip_prefix('e')?;
            command.starts_with([' ', '\t']).then(|| command.trim().to_string()).filter(|c| !c.is_empty())
        })
        .collect()
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
        "sandbox" => match args.first().map(String::as_str) {
            Some("run") => rest(Some(1)),
            _ => Vec::new(),
        },
        "hub" => match args.first().map(String::as_str) {
            Some("call") => rest(Some(1)),
            _ => Vec::new(),
        },
        // The first operand is the CPU mask (or list); `-p` changes a running process.
        "taskset" if !args.iter().any(|a| a == "-p" || a == "--pid") => {
            rest(skip_options(args, "", &[]).map(|i| i + 1))
        }
        "unshare" => rest(skip_options(args, "SGRwl", &["setuid", "setgid", "root", "wd", "load-interp"])),
        "setpriv" => rest(skip_options(
            args,
            "",
            &[
                "reuid",
                "regid",
                "groups",
                "inh-caps",
                "ambient-caps",
                "bounding-set",
                "securebits",
                "pdeathsig",
                "selinux-label",
                "apparmor-profile",
                "landlock-access",
                "landlock-rule",
                "ruid",
                "euid",
                "rgid",
                "egid",
            ],
        )),
        // The first operand is the priority.
        "chrt" if !args.iter().any(|a| a == "-p" || a == "--pid") => {
            rest(skip_options(args, "TPD", &["sched-runtime", "sched-period", "sched-deadline"]).map(|i| i + 1))
        }
        "prlimit" if !args.iter().any(|a| a == "-p" || a.starts_with("--pid")) => {
            rest(skip_options(args, "o", &["output"]))
        }
        // The first operand is the new root, or the lock file.
        "chroot" => rest(skip_options(args, "", &["userspec", "groups"]).map(|i| i + 1)),
        "flock" => {
            let at = skip_options(args, "wEc", &["timeout", "wait", "conflict-exit-code", "command"]);
            rest(at.map(|i| i + 1))
        }
        "nsenter" => rest(skip_options(args, "tSGrwe", &["target", "setuid", "setgid", "root", "wd", "env"])),
        "strace" => rest(skip_options(args, "abeEIoOpPsSuUX", &["output", "user", "env"])),
        "ltrace" => rest(skip_options(args, "aAeEFlLnopsSu", &["output", "library"])),
        "unbuffer" => rest(skip_options(args, "", &[])),
        // `setarch ARCH [options] command`.
        "setarch" => rest(skip_options(&args[1.min(args.len())..], "", &[]).map(|i| i + 1)),
        // `--compress-program=PROG` runs PROG to compress temporary files.
        "sort" => long_value(args, "--compress-program").map(|program| vec![vec![program]]).unwrap_or_default(),
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
            ("sandbox run rm -rf /", "rm -rf /"),
            ("hub call echoer --query x", "echoer --query x"),
            ("taskset 1 rm -rf /", "rm -rf /"),
            ("taskset -c 0,1 rm -rf /", "rm -rf /"),
            ("unshare -r rm -rf /", "rm -rf /"),
            ("unshare --map-root-user -S 0 rm -rf /", "rm -rf /"),
            ("setpriv --reuid=1000 rm -rf /", "rm -rf /"),
            ("setpriv --reuid 1000 --clear-groups rm -rf /", "rm -rf /"),
            ("chrt -o 0 rm -rf /", "rm -rf /"),
            ("chrt 5 rm -rf /", "rm -rf /"),
            ("prlimit --nofile=100 rm -rf /", "rm -rf /"),
            ("chroot / rm -rf /", "rm -rf /"),
            ("flock /tmp/l rm -rf /", "rm -rf /"),
            ("nsenter -t 1 -m rm -rf /", "rm -rf /"),
            ("strace -f -o log rm -rf /", "rm -rf /"),
            ("setarch x86_64 -R rm -rf /", "rm -rf /"),
            ("sort --compress-program=python3 big", "python3"),
            ("sort --compress-program python3 big", "python3"),
        ] {
            assert_eq!(innermost(line), argv(inner), "{line}");
        }
        let split = invocations(&["env".into(), "-S".into(), "rm -rf".into(), "/".into()]);
        assert_eq!(split.last(), Some(&argv("rm -rf /")), "env -S splits its string");
        assert_eq!(invocations(&argv("timeout 5")).len(), 1, "a wrapper with nothing to run is itself only");
        assert_eq!(invocations(&argv("ls -la")), vec![argv("ls -la")]);
    }

    /// The scripts a program hands to a shell, as each spells them.
    #[test]
    fn scripts_handed_to_a_shell_are_read() {
        use super::reentries;
        let ctx = crate::words::Context::new("/ws", "/home/u");
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for (argv, scripts) in [
            (words(&["bash", "-c", "rm -rf /"]), vec!["rm -rf /"]),
            (words(&["sandbox", "bash", "rm -rf *"]), vec!["rm -rf *"]),
            (words(&["sandbox", "run", "ls"]), vec![]),
            (words(&["script", "-qc", "rm -rf /", "/dev/null"]), vec!["rm -rf /"]),
            (words(&["script", "--command=rm -rf /"]), vec!["rm -rf /"]),
            (words(&["su", "-c", "rm -rf /"]), vec!["rm -rf /"]),
            (words(&["flock", "/tmp/l", "-c", "rm -rf /"]), vec!["rm -rf /"]),
            (words(&["watch", "-n", "1", "rm", "-rf", "/"]), vec!["rm -rf /"]),
            (words(&["awk", "{system(\"rm -rf /\")}"]), vec!["rm -rf /"]),
            (words(&["gawk", "-F:", "{print $1 | \"sh -c 'rm -rf /'\"}"]), vec!["sh -c 'rm -rf /'"]),
            (words(&["awk", "BEGIN { \"rm -rf /\" | getline x }"]), vec!["rm -rf /"]),
            (words(&["awk", "{print \"system(x)\"}"]), vec![]),
            (words(&["sed", "1e rm -rf /", "f"]), vec!["rm -rf /"]),
            (words(&["sed", "-e", "s/a/b/", "-e", "e python3 x.py"]), vec!["python3 x.py"]),
            (words(&["sed", "s/a/b/", "f"]), vec![]),
            (words(&["ls", "-c"]), vec![]),
        ] {
            assert_eq!(reentries(&argv, &ctx), scripts, "{argv:?}");
        }
    }

    #[test]
    fn find_gives_one_command_per_root_and_exec() {
        let all = invocations(&argv("find a b -exec rm {} ; -exec touch {}/x ;"));
        assert_eq!(all.len(), 5);
        assert!(all.contains(&argv("touch b/x")));
    }
}
