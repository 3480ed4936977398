//! What bashkit can say about one of its builtins, for `help NAME`.
//!
//! bashkit has three sources, asked in order: a program builtin's own
//! `--help` (grep, sed, jq…) or its table of one-line usages for shell
//! builtins (cd, read…), both through its `man`; the usage line a builtin
//! prints when it is called wrongly (`declare: usage: …`, `csv: usage: …`);
//! and, for the few that have neither, [`SYNOPSES`] here.
//!
//! Each is asked of a bare engine of its own (no workspace, nothing mounted,
//! no agent commands, a short time limit): a session's own `help` is ours,
//! `exit --help` would end the shell it runs in, and running the line in the
//! session would pass through its gate, limits and audit for what is only
//! documentation.

use std::time::Duration;

use bashkit::{Bash, ExecutionLimits};

use crate::shell::{builtin_names, kept_builtin};

/// Usage and one line of what it does, for the builtins bashkit has no help
/// text or usage message for (a test keeps every row needed).
const SYNOPSES: &[(&str, &str, &str)] = &[
    (":", ": [arguments]", "does nothing and exits 0 (its arguments are still expanded)"),
    ("bg", "bg [job_spec ...]", "resumes a stopped job in the background"),
    ("builtin", "builtin shell-builtin [arg ...]", "runs a shell builtin, bypassing a function of the same name"),
    ("caller", "caller [expr]", "prints the line and file of the current function call"),
    ("clear", "clear", "prints the escape codes that clear a terminal screen"),
    (
        "command",
        "command [-pVv] command [arg ...]",
        "runs a command, bypassing functions; -v prints how a name resolves",
    ),
    ("dirs", "dirs [-clpv]", "prints the directory stack of pushd and popd"),
    ("disown", "disown [-h] [-ar] [job_spec ...]", "removes jobs from the job table"),
    ("envsubst", "envsubst [SHELL-FORMAT] < input", "replaces $VAR and ${VAR} in stdin with the environment's values"),
    ("exec", "exec [command [arg ...]] [redirection ...]", "runs command in place of the shell"),
    ("fg", "fg [job_spec]", "brings a background job to the foreground"),
    ("history", "history [-c] [n]", "lists the commands run so far"),
    ("let", "let expression [expression ...]", "evaluates arithmetic; exits 1 when the last value is 0"),
    (
        "mapfile",
        "mapfile [-t] [-n count] [-s count] [-d delim] [array]",
        "reads the lines of stdin into an indexed array (MAPFILE by default)",
    ),
    ("openssl", "openssl rand [-hex|-base64] [-out FILE] NUM", "random bytes; the only openssl command here"),
    ("pgrep", "pgrep [-flacx] pattern", "lists the shell's jobs whose name matches the regex"),
    ("pkill", "pkill [-SIGNAL] [-fx] pattern", "signals the shell's jobs whose name matches the regex"),
    ("ps", "ps [-ef | aux] [-o pid,comm] [-p PID]", "lists the shell's virtual processes (itself and its jobs)"),
    (
        "readarray",
        "readarray [-t] [-n count] [-s count] [-d delim] [array]",
        "reads the lines of stdin into an indexed array (the same as mapfile)",
    ),
    (
        "template",
        "template [-d DATA_FILE] [-e] [--strict] [TEMPLATE_FILE]",
        "fills {{var}}, {{#if var}}…{{/if}} and {{#each var}}…{{/each}} from a JSON file, variables or the \
         environment; reads the template from stdin without a file",
    ),
    ("times", "times", "prints the user and system time of the shell and of its children"),
    ("wait", "wait [id ...]", "waits for background jobs (cmd &) and returns the last one's status"),
    ("which", "which [-a] name ...", "prints the path each command runs from"),
];

/// How long one question to a bare engine may take: help is printed text.
const ASK_TIME: Duration = Duration::from_secs(2);

/// What bashkit says about one of its builtins (see the module's doc), or
/// `None` for a name that is not one of a session's builtins.
pub async fn builtin_help(name: &str) -> Option<String> {
    if !builtin_names().iter().any(|b| b == name) {
        return None;
    }
    let text = bashkit_help(name).await.or_else(|| {
        SYNOPSES.iter().find(|(n, ..)| *n == name).map(|(_, usage, what)| format!("{name}: {what}\nUsage: {usage}\n"))
    })?;
    Some(match ALIASES.iter().find(|(n, _)| *n == name) {
        Some((_, meaning)) => format!("{name} is {meaning}:\n\n{text}"),
        None => text,
    })
}

/// Commands for which `--help` is an ordinary word, as in bash (`echo
/// --help` prints it, `test --help` is true).
const HELP_IS_AN_OPERAND: &[&str] = &[":", "true", "false", "test", "[", "echo"];

/// What `NAME --help` prints for one of bashkit's builtins: [`builtin_help`],
/// so that every command answers it, as bash's builtins and GNU's tools
/// do, even those bashkit gives none (`csv`, `cd`) and those where running
/// would act (`exit`, `read`). `None` for the commands that take the word
/// as an operand, and for names that are not bashkit's (ours answer it
/// themselves; programs of the OS tier are asked).
pub(crate) async fn flag_help(name: &str) -> Option<String> {
    if HELP_IS_AN_OPERAND.contains(&name) {
        return None;
    }
    builtin_help(name).await
}

/// Names whose help is another command's, and what each one means.
const ALIASES: &[(&str, &str)] =
    &[("egrep", "grep -E"), ("fgrep", "grep -F"), ("gawk", "awk"), ("mawk", "awk"), ("nawk", "awk")];

/// The help or usage bashkit itself prints for `name`, if any.
async fn bashkit_help(name: &str) -> Option<String> {
    // bashkit's names hold no quote, so single quotes pass each one whole.
    if let Some(page) = ask(&format!("man '{name}'")).await.filter(|r| r.exit_code == 0).map(|r| r.stdout) {
        // `man` heads the page `NAME(1)` like a manual; the caller titles it.
        let text = page.strip_prefix(&format!("{}(1)\n\n", name.to_uppercase())).unwrap_or(&page);
        // `man` takes any output of `NAME --help` for its page, also from a
        // command that ignores the flag (`clear` clears, `ps` lists).
        if is_usage(text) {
            return Some(text.to_string());
        }
    }
    for line in [format!("'{name}' --help"), format!("'{name}'")] {
        let Some(said) = ask(&line).await else { continue };
        // `man` leaves out the interpreter's own names (bash, sh) and shell
        // builtins outside its table (kill), whose `--help` is a usage.
        if said.exit_code == 0 && is_usage(&said.stdout) {
            return Some(said.stdout);
        }
        if let Some(usage) = usage_message(&said.stderr) {
            return Some(usage);
        }
    }
    None
}

/// Text that reads as help: it gives a usage.
fn is_usage(text: &str) -> bool {
    text.to_lowercase().contains("usage:")
}

/// stdout and stderr as text, and the exit code.
struct Said {
    stdout: String,
    stderr: String,
    exit_code: i32,
}

/// Runs `line` in a bare engine of its own; `None` when it could not run.
async fn ask(line: &str) -> Option<Said> {
    let mut bash =
        Bash::builder().builtin_filter(kept_builtin).limits(ExecutionLimits::new().timeout(ASK_TIME)).build();
    let result = bash.exec(line).await.ok()?;
    Some(Said {
        stdout: result.stdout.text_lossy().into_owned(),
        stderr: result.stderr.text_lossy().into_owned(),
        exit_code: result.exit_code,
    })
}

/// The usage a builtin printed on stderr, from its `usage:` line on, without
/// bash's `bash: line 1: ` prefix; `None` when it printed none.
fn usage_message(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr.lines().collect();
    let first = lines.iter().position(|l| is_usage(l))?;
    let mut text = String::new();
    for line in &lines[first..] {
        let line = match line.strip_prefix("bash: line ") {
            Some(rest) => rest.split_once(": ").map_or(*line, |(_, after)| after),
            None => line,
        };
        text.push_str(line);
        text.push('\n');
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_builtin_has_help_that_names_it() {
        let mut missing = Vec::new();
        for name in builtin_names() {
            match builtin_help(name).await {
                Some(text) if text.contains(name.as_str()) => {}
                other => missing.push(format!("{name}: {other:?}")),
            }
        }
        assert!(missing.is_empty(), "no help, or help not naming the command:\n{}", missing.join("\n"));
    }

    #[tokio::test]
    async fn each_source_in_turn() {
        let cases = [
            // The program's own --help, whole.
            ("grep", "Usage: grep [OPTION]... PATTERNS [FILE]...\nSearch for PATTERNS in each FILE.\n"),
            // bashkit's table for shell builtins.
            ("cd", "cd: Change directory\nUsage: cd [DIR]\n"),
            // The interpreter's own name: its --help, which man does not ask.
            ("bash", "Usage: bash [option] ... [file [argument] ...]\n"),
            // The usage a wrong call prints, without bash's prefix.
            ("declare", "declare: usage: declare [-aAfFgiIlnrtux]"),
            (
                "csv",
                "csv: usage: csv <subcommand> [options] [file]\nSubcommands: select, count, headers, filter, sort\n",
            ),
            ("unalias", "unalias: usage: unalias [-a] name [name ...]\n"),
            // Our synopsis.
            ("which", "which: prints the path each command runs from\nUsage: which [-a] name ...\n"),
        ];
        for (name, start) in cases {
            let text = builtin_help(name).await.unwrap_or_default();
            assert!(text.starts_with(start), "{name}: {text:?}");
        }
        assert_eq!(builtin_help("nosuch").await, None);
        // An agent command or a program of the OS tier is not bashkit's.
        assert_eq!(builtin_help("python3").await, None);
    }

    /// A synopsis is for a builtin bashkit says nothing about: when a newer
    /// bashkit gains help for one, its row goes.
    #[tokio::test]
    async fn every_synopsis_is_for_a_silent_builtin() {
        for (name, ..) in SYNOPSES {
            assert!(builtin_names().iter().any(|b| b == name), "{name} is not a builtin any more");
            assert_eq!(bashkit_help(name).await, None, "{name}: bashkit has help for it now");
        }
    }
}
