//! Routing a line whole to the sandbox's GNU tools: a line of streaming
//! standard tools over a big file (the in-process shell reads whole files,
//! up to `limits.max_memory_bytes`, and is several times slower per line),
//! or one that walks a big tree (`find`, `grep -r`, `du`, `ls -R`: the
//! in-process walk stats every entry through the workspace handle, where GNU
//! tools read the listing). The answer is GNU bash's either way; the line
//! is decided by the policy gate whole, and runs in the jail.

use clix_sandbox::Sandbox;
use clix_shell::{Kind, Shell};

/// Standard tools whose GNU versions stream, so a line made only of them can
/// run whole in the sandbox's bash over files of any size.
const STREAMING_TOOLS: &[&str] = &[
    "grep",
    "egrep",
    "fgrep",
    "wc",
    "sort",
    "uniq",
    "head",
    "tail",
    "cut",
    "tr",
    "sed",
    "awk",
    "cat",
    "tac",
    "nl",
    "rev",
    "md5sum",
    "sha256sum",
    "zcat",
    "gzip",
    "gunzip",
    "tee",
    "comm",
    "join",
    "paste",
    "fold",
    "expand",
];

/// Tools that walk a tree (besides `grep -r`, a streaming tool): routed when
/// the tree they walk is big. `xargs` only in front of a streaming tool.
const TREE_TOOLS: &[&str] = &["find", "du", "ls", "xargs"];

/// `find` primaries that run other commands: a line with them stays in the
/// shell, where each command it runs is decided by the gate.
const FIND_RUNS: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

/// GNU `xargs`'s short options that take a value, attached or the next
/// word. `-i`, `-l` and `-e` take theirs only attached (`-l5`), never the
/// next word: `xargs -l rm -rf x` runs `rm`.
const XARGS_VALUED: &str = "IdnLPsEa";
/// Its long options whose value may be the next word (`--max-args 2`).
const XARGS_VALUED_LONG: &[&str] =
    &["--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"];

/// Devices that never end: the in-process shell reads a bounded block of each.
const ENDLESS_DEVICES: &[&str] = &["/dev/zero", "/dev/urandom", "/dev/random"];

/// Characters that make a line more than one plain command.
const SHELL_SYNTAX: &[char] = &['|', '&', ';', '<', '>', '(', ')', '$', '`', '!', '{', '}', '*', '?', '[', '\n', '#'];

/// The argv to run in the sandbox when `line` should bypass the in-process
/// engine: every command is a streaming standard tool or a tree walker the
/// sandbox has, every word is literal (so no session variable is needed),
/// and some file it names is at least `big_file_mb`, or some tree it walks
/// holds at least `big_tree_entries` entries. A single plain command runs
/// directly; anything else runs in GNU bash.
///
/// Routed lines and big files left in the shell are debug events, with why;
/// sizes are looked up for a line that could not be routed only when those
/// events are on.
pub(super) fn routed_line(shell: &Shell, sandbox: &Sandbox, line: &str) -> Option<Vec<String>> {
    let analysis = shell.analyze(line)?;
    let dynamic = analysis.truncated
        || analysis.has_dynamic_commands
        || analysis.has_command_substitution
        || analysis.has_interpreter_reentry
        || !analysis.functions.is_empty()
        || analysis.commands.is_empty();
    // The sandbox's programs are looked up only for a line worth routing:
    // finding them lays the sandbox out, which a line of in-process
    // commands on small files never needs.
    let standard = !dynamic && analysis.commands.iter().all(routable);
    if !standard && !tracing::enabled!(tracing::Level::DEBUG) {
        return None;
    }
    let threshold = sandbox.settings().big_file_mb << 20;
    let cwd = shell.cwd();
    let big = analysis
        .commands
        .iter()
        .flat_map(|c| c.args.iter().flatten())
        .chain(analysis.redirects.iter().filter_map(|r| r.path.as_ref()))
        // Through the handle: a word naming a place outside the workspace
        // (`../x`, a symlink out) tells nothing about it.
        .find_map(|word| {
            let meta = shell.folder().metadata(&cwd.join(word)).ok()?;
            (meta.kind == Kind::File && meta.len >= threshold)
                .then(|| format!("{word} is {} bytes (sandbox.big_file_mb)", meta.len))
        });
    // The in-process shell reads an endless device as a bounded block; GNU
    // tools stream it. Only a line with no redirection: one that writes a
    // file (`> /tmp/key`) must write it where the session keeps it.
    let endless = || {
        if !analysis.redirects.is_empty() {
            return None;
        }
        analysis
            .commands
            .iter()
            .flat_map(|c| c.args.iter().flatten())
            .find(|word| ENDLESS_DEVICES.contains(&word.as_str()))
            .map(|word| format!("{word} never ends, and the in-process shell reads only a block of it"))
    };
    let why = big.or_else(endless).or_else(|| {
        // Only a line that can be routed is worth a walk.
        let entries = sandbox.settings().big_tree_entries;
        let mut roots = standard.then(|| analysis.commands.iter().flat_map(tree_roots))?;
        let root = roots.find(|root| shell.folder().holds_at_least(&cwd.join(root), entries))?;
        Some(format!("{root} holds {entries} entries or more (sandbox.big_tree_entries)"))
    })?;
    let standard = standard && analysis.commands.iter().all(|c| programs_of(c).iter().all(|p| sandbox.has_program(p)));
    if !standard {
        let reason = if dynamic {
            "the line computes commands or words at run time, or defines functions"
        } else {
            "not every command is a streaming standard tool the sandbox has (grep, wc, sort, awk, …)"
        };
        tracing::debug!(
            why,
            reason,
            "big file, but the line stays in the in-process shell, which reads whole files (up to limits.max_memory_bytes)"
        );
        return None;
    }
    let argv = match analysis.commands.as_slice() {
        [only] if analysis.redirects.is_empty() && !line.contains(SHELL_SYNTAX) => {
            only.name.iter().chain(only.args.iter().flatten()).cloned().collect::<Vec<_>>()
        }
        _ => ["bash", "-c", line].map(String::from).to_vec(),
    };
    tracing::debug!(
        why,
        runner = if argv[0] == "bash" { "GNU bash -c, the whole line" } else { argv[0].as_str() },
        "routing: the line runs whole in the sandbox's GNU tools"
    );
    Some(argv)
}

/// Whether a GNU tool can take this command's place: a streaming tool or
/// a tree walker, with literal words only (whether the sandbox has it is
/// [`programs_of`]'s question, asked later).
fn routable(command: &bashkit::AnalyzedCommand) -> bool {
    let Some(name) = command.name.as_deref() else { return false };
    let args: Vec<&str> = command.args.iter().flatten().map(String::as_str).collect();
    let tool = match name {
        // `cat -b` is our base64, not GNU's numbering.
        "cat" => !args.iter().any(|a| a.starts_with('-')),
        "find" => !args.iter().any(|a| FIND_RUNS.contains(a)),
        // xargs runs a command: only a streaming tool, which runs in the sandbox too.
        "xargs" => xargs_command(&args).is_some_and(|c| STREAMING_TOOLS.contains(&c)),
        _ => STREAMING_TOOLS.contains(&name) || TREE_TOOLS.contains(&name),
    };
    tool && command.assignments.is_empty() && command.args.iter().all(Option::is_some)
}

/// The programs a routed command needs in the sandbox: its own, and the
/// one `xargs` runs.
fn programs_of(command: &bashkit::AnalyzedCommand) -> Vec<&str> {
    let Some(name) = command.name.as_deref() else { return Vec::new() };
    let mut programs = vec![name];
    if name == "xargs" {
        let args: Vec<&str> = command.args.iter().flatten().map(String::as_str).collect();
        programs.extend(xargs_command(&args));
    }
    programs
}

/// The command `xargs` runs: its first word that is not an option or an
/// option's value.
fn xargs_command<'a>(args: &[&'a str]) -> Option<&'a str> {
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let takes_next = if word.starts_with("--") {
            XARGS_VALUED_LONG.contains(word)
        } else if let Some(letters) = word.strip_prefix('-').filter(|l| !l.is_empty()) {
            // A cluster (`-0n 1`): the first letter that takes a value takes
            // the rest of the word, or the next word when nothing is left.
            letters
                .char_indices()
                .find(|(_, c)| XARGS_VALUED.contains(*c) || "ile".contains(*c))
                .is_some_and(|(i, c)| XARGS_VALUED.contains(c) && i + 1 == letters.len())
        } else {
            return Some(word);
        };
        if takes_next {
            words.next();
        }
    }
    None
}

/// The folders a command walks, as written: `find`'s starting points, `du`'s
/// operands, and those of `ls -R` and `grep -r` (`.` when none is given).
/// A word that is not a folder (grep's pattern) is looked at and found
/// holding nothing.
fn tree_roots(command: &bashkit::AnalyzedCommand) -> Vec<String> {
    let Some(name) = command.name.as_deref() else { return Vec::new() };
    let args: Vec<&str> = command.args.iter().flatten().map(String::as_str).collect();
    let short = |letters: &[char]| {
        args.iter()
            .any(|a| a.starts_with('-') && !a.starts_with("--") && a.chars().skip(1).any(|c| letters.contains(&c)))
    };
    let plain = || args.iter().filter(|a| !a.starts_with('-')).map(|a| a.to_string()).collect();
    let recursive_grep = short(&['r', 'R'])
        || args.iter().any(|a| a.starts_with("--recursive") || a.starts_with("--dereference-recursive"));
    let operands: Vec<String> = match name {
        "find" => args
            .iter()
            .take_while(|a| !a.starts_with('-') && !matches!(**a, "(" | "!"))
            .map(|a| a.to_string())
            .collect(),
        "du" => plain(),
        "ls" if short(&['R']) || args.contains(&"--recursive") => plain(),
        "grep" | "egrep" | "fgrep" if recursive_grep => plain(),
        _ => return Vec::new(),
    };
    if operands.is_empty() { vec![".".to_string()] } else { operands }
}

#[cfg(test)]
mod tests {
    use super::xargs_command;

    /// The command GNU xargs runs, as GNU xargs reads its options.
    #[test]
    fn xargs_options_are_read_as_gnu_xargs_reads_them() {
        for (line, command) in [
            ("grep x", Some("grep")),
            ("-n 1 grep x", Some("grep")),
            ("-n1 grep x", Some("grep")),
            ("-0n 1 grep x", Some("grep")),
            ("-I {} grep {}", Some("grep")),
            ("-l rm -rf grep", Some("rm")),
            ("-l5 grep x", Some("grep")),
            ("-i rm x", Some("rm")),
            ("-e rm x", Some("rm")),
            ("-eEND grep x", Some("grep")),
            ("--max-args 2 grep x", Some("grep")),
            ("--max-args=2 grep x", Some("grep")),
            ("--replace rm x", Some("rm")),
            ("-P 4 -L 2 wc -l", Some("wc")),
            ("-0", None),
        ] {
            let args: Vec<&str> = line.split(' ').collect();
            assert_eq!(xargs_command(&args), command, "xargs {line}");
        }
    }
}
