//! Big-file routing: a line of streaming standard tools over a file too big
//! for the in-process shell (which reads whole files, up to
//! `limits.max_memory_bytes`) runs whole in the sandbox's GNU tools instead.

use clix_sandbox::Sandbox;
use clix_shell::{Kind, Session};

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

/// Characters that make a line more than one plain command.
const SHELL_SYNTAX: &[char] = &['|', '&', ';', '<', '>', '(', ')', '$', '`', '!', '{', '}', '*', '?', '[', '\n', '#'];

/// The argv to run in the sandbox when `line` should bypass the in-process
/// engine: every command is a streaming standard tool the sandbox has, every
/// word is literal (so no session variable is needed), and some file it
/// names is at least `big_file_mb`. bashkit buffers whole files and refuses
/// inputs over its input cap; GNU tools stream them in constant memory.
/// A single plain command runs directly; anything else runs in GNU bash.
///
/// Routed lines and big files left in the shell are debug events, with why;
/// sizes are looked up for a line that could not be routed only when those
/// events are on.
pub(super) fn big_file_line(session: &Session, sandbox: &Sandbox, line: &str) -> Option<Vec<String>> {
    let analysis = session.analyze(line)?;
    let dynamic = analysis.truncated
        || analysis.has_dynamic_commands
        || analysis.has_command_substitution
        || analysis.has_interpreter_reentry
        || !analysis.functions.is_empty()
        || analysis.commands.is_empty();
    let standard = !dynamic
        && analysis.commands.iter().all(|c| {
            c.name.as_deref().is_some_and(|n| STREAMING_TOOLS.contains(&n) && sandbox.has_program(n))
            && c.assignments.is_empty()
            && c.args.iter().all(Option::is_some)
            // `cat -b` is our base64, not GNU's numbering.
            && !(c.name.as_deref() == Some("cat") && c.args.iter().flatten().any(|a| a.starts_with('-')))
        });
    if !standard && !tracing::enabled!(tracing::Level::DEBUG) {
        return None;
    }
    let threshold = sandbox.settings().big_file_mb << 20;
    let cwd = session.cwd();
    let big = analysis
        .commands
        .iter()
        .flat_map(|c| c.args.iter().flatten())
        .chain(analysis.redirects.iter().filter_map(|r| r.path.as_ref()))
        // Through the handle: a word naming a place outside the workspace
        // (`../x`, a symlink out) tells nothing about it.
        .find_map(|word| {
            let meta = session.folder().metadata(&cwd.join(word)).ok()?;
            (meta.kind == Kind::File && meta.len >= threshold).then(|| (word.clone(), meta.len))
        });
    let (file, bytes) = big?;
    if !standard {
        let reason = if dynamic {
            "the line computes commands or words at run time, or defines functions"
        } else {
            "not every command is a streaming standard tool the sandbox has (grep, wc, sort, awk, …)"
        };
        tracing::debug!(
            file,
            bytes,
            threshold_bytes = threshold,
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
        file,
        bytes,
        threshold_bytes = threshold,
        runner = if argv[0] == "bash" { "GNU bash -c, the whole line" } else { argv[0].as_str() },
        "big-file routing: the line runs whole in the sandbox's GNU tools, which stream (sandbox.big_file_mb)"
    );
    Some(argv)
}
