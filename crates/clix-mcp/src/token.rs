//! The bearer token of the HTTP server. Every listener has one: loopback is
//! shared with every local user, container and sandboxed program with the
//! network, so an address alone authenticates nobody. The token never
//! travels on a command line (`/proc/PID/cmdline` is world-readable): it
//! comes from `CLIX_MCP_TOKEN`, from a 0600 file, or is made once and kept
//! in a 0600 file of the state folder for the person's clients to read.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use clix_common::Secret;

use crate::ServeError;

/// The file a made token is kept in, under the state folder.
pub const TOKEN_FILE: &str = "mcp-token";

/// Random bytes in a made token (64 hex digits).
const TOKEN_BYTES: usize = 32;

/// A token, and where it came from (what the server tells its person).
#[derive(Debug)]
pub struct Token {
    /// What clients send after `Bearer `.
    pub secret: Secret,
    /// Where it came from.
    pub origin: TokenOrigin,
}

/// Where a token came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenOrigin {
    /// `CLIX_MCP_TOKEN`.
    Environment,
    /// `--token-file FILE`, the person's own.
    File(PathBuf),
    /// Made by clix (now or by an earlier server) and kept in this file.
    Kept(PathBuf),
}

impl Token {
    /// The token from `CLIX_MCP_TOKEN` (`env`), else `--token-file`
    /// (`file`), else the one kept under `state_dir`, made on first use.
    pub fn resolve(env: Option<String>, file: Option<&Path>, state_dir: &Path) -> Result<Token, ServeError> {
        if let Some(value) = env.filter(|v| !v.trim().is_empty()) {
            return Ok(Token { secret: Secret::new(value.trim()), origin: TokenOrigin::Environment });
        }
        if let Some(file) = file {
            let secret = read_private(file)?;
            return Ok(Token { secret, origin: TokenOrigin::File(file.to_path_buf()) });
        }
        let kept = state_dir.join(TOKEN_FILE);
        let secret = kept_or_made(state_dir, &kept)?;
        Ok(Token { secret, origin: TokenOrigin::Kept(kept) })
    }

    /// The line the server prints once it listens, so the person knows
    /// what to give clients. Only a token clix made is printed: the person
    /// already has one they gave.
    pub fn announcement(&self) -> String {
        match &self.origin {
            TokenOrigin::Environment => "clix mcp: clients send `Authorization: Bearer <CLIX_MCP_TOKEN>`".into(),
            TokenOrigin::File(file) => {
                format!("clix mcp: clients send `Authorization: Bearer <the token in {}>`", file.display())
            }
            TokenOrigin::Kept(file) => format!(
                "clix mcp: clients send `Authorization: Bearer {}` (kept in {}, mode 0600)",
                self.secret.expose(),
                file.display()
            ),
        }
    }
}

/// The token in `file`, which only its owner (this user) may read or change.
fn read_private(file: &Path) -> Result<Secret, ServeError> {
    let opened =
        File::open(file).map_err(|e| ServeError(format!("cannot read the token file {}: {e}", file.display())));
    let mut opened = opened?;
    let meta = opened.metadata().map_err(|e| ServeError(format!("{}: {e}", file.display())))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.is_file() || meta.uid() != me || meta.mode() & 0o077 != 0 {
        return Err(ServeError(format!(
            "the token file {} must be a regular file of yours that no one else can read or write \
             (found mode {:o}, owner {}): run chmod 600 {} (and chown it to yourself)",
            file.display(),
            meta.mode() & 0o7777,
            meta.uid(),
            file.display()
        )));
    }
    let mut text = String::new();
    opened
        .read_to_string(&mut text)
        .map_err(|e| ServeError(format!("cannot read the token file {}: {e}", file.display())))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(ServeError(format!(
            "the token file {} is empty: write a long random token in it, e.g. openssl rand -hex 32 > {}",
            file.display(),
            file.display()
        )));
    }
    if token.contains(char::is_whitespace) {
        return Err(ServeError(format!("the token in {} must be one word (no spaces or lines)", file.display())));
    }
    Ok(Secret::new(token))
}

/// The kept token, or a new one written to `kept` (0600 in a 0700 folder).
/// Two servers starting at once both end up with the one that was written.
fn kept_or_made(state_dir: &Path, kept: &Path) -> Result<Secret, ServeError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state_dir)
        .map_err(|e| ServeError(format!("cannot create the state folder {}: {e}", state_dir.display())))?;
    let made = new_token()?;
    match OpenOptions::new().write(true).create_new(true).mode(0o600).open(kept) {
        Ok(mut file) => {
            file.write_all(format!("{}\n", made.expose()).as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(|e| ServeError(format!("cannot write the token file {}: {e}", kept.display())))?;
            Ok(made)
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => read_private(kept),
        Err(e) => Err(ServeError(format!("cannot write the token file {}: {e}", kept.display()))),
    }
}

/// 32 bytes from the kernel's random source, as hex.
fn new_token() -> Result<Secret, ServeError> {
    let mut bytes = [0u8; TOKEN_BYTES];
    File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .map_err(|e| ServeError(format!("cannot make a token (/dev/urandom): {e}")))?;
    Ok(Secret::new(clix_common::hex(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_token_is_made_once_kept_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let first = Token::resolve(None, None, &state).unwrap();
        let kept = state.join(TOKEN_FILE);
        assert_eq!(first.origin, TokenOrigin::Kept(kept.clone()));
        assert_eq!(first.secret.expose().len(), 64);
        assert_eq!(std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&state).unwrap().permissions().mode() & 0o777, 0o700);
        let again = Token::resolve(None, None, &state).unwrap();
        assert_eq!(again.secret.expose(), first.secret.expose(), "the kept token serves the next server too");
        assert!(first.announcement().contains(first.secret.expose()));
    }

    #[test]
    fn the_environment_wins_and_is_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let token = Token::resolve(Some("from-env".into()), None, dir.path()).unwrap();
        assert_eq!(token.secret.expose(), "from-env");
        assert!(!token.announcement().contains("from-env"));
        assert!(!dir.path().join(TOKEN_FILE).exists(), "nothing is written when a token is given");
    }

    #[test]
    fn a_token_file_others_can_read_or_that_is_empty_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t");
        std::fs::write(&file, "s3cret\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = Token::resolve(None, Some(&file), dir.path()).unwrap_err().0;
        assert!(refused.contains("chmod 600"), "{refused}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let token = Token::resolve(None, Some(&file), dir.path()).unwrap();
        assert_eq!(token.secret.expose(), "s3cret");
        assert!(!token.announcement().contains("s3cret"));
        std::fs::write(&file, "  \n").unwrap();
        assert!(Token::resolve(None, Some(&file), dir.path()).unwrap_err().0.contains("is empty"));
    }
}
