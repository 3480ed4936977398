//! A folder outside the workspace that the attack tests must leave alone:
//! two files anyone may read, change or delete, so only the jail stands
//! between them and a hostile line, whichever user runs it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The files of a canary folder, each holding the canary text.
const FILES: [&str; 2] = ["FILE", "victim"];

/// A planted canary folder.
pub struct Canary {
    dir: PathBuf,
    text: String,
}

impl Canary {
    /// Makes the folder `dir` (mode 0777) with `FILE` and `victim` (mode
    /// 0666), each holding `text` and a newline.
    pub fn plant(dir: &Path, text: &str) -> Canary {
        let text = format!("{text}\n");
        let made = std::fs::create_dir(dir)
            .and_then(|()| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)))
            .and_then(|()| {
                FILES.iter().try_for_each(|name| {
                    std::fs::write(dir.join(name), &text)?;
                    std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o666))
                })
            });
        if let Err(e) = made {
            panic!("cannot plant the canary in {}: {e}", dir.display());
        }
        Canary { dir: dir.to_path_buf(), text }
    }

    /// The canary folder, for symlinks that point at it.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Panics, naming `case`, when an entry of the folder was added,
    /// removed or changed.
    pub fn assert_untouched(&self, case: &str) {
        let mut found: Vec<(String, String)> = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries
                .flatten()
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        std::fs::read_to_string(e.path()).unwrap_or_default(),
                    )
                })
                .collect(),
            Err(e) => panic!("{case}: the canary folder {} is gone: {e}", self.dir.display()),
        };
        found.sort();
        let want: Vec<(String, String)> = FILES.iter().map(|n| (n.to_string(), self.text.clone())).collect();
        assert_eq!(found, want, "{case}: the canary folder was changed");
    }
}
