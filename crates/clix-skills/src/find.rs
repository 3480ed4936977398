//! Where skills are found, which one wins a name, and what was wrong.

use std::fmt;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use clix_workspace::{Folder, Kind};

use crate::SKILL_FILE;
use crate::parse::parse_skill_md;

/// The person's skills: this folder inside clix's config folder.
pub const PERSON_FOLDER: &str = "skills";
/// A workspace's skills, in the order they win a name between themselves.
pub const WORKSPACE_FOLDERS: [&str; 2] = [".clix/skills", ".agents/skills"];

/// The most of a `SKILL.md` clix reads: a planted huge file costs nothing.
pub(crate) const SKILL_FILE_LIMIT: u64 = 1 << 20;

/// Where a session's skills come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillsConfig {
    /// The person's skills folder (`<config>/skills`); `None`: none.
    pub person_dir: Option<PathBuf>,
    /// Bytes of the level-0 list (`[skills] level0_bytes`).
    pub level0_bytes: usize,
}

/// Whose a skill is, which decides whom it is trusted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The person's own config folder: wins a name.
    Person,
    /// The workspace (a cloned repository may have put it there): untrusted.
    Workspace,
}

impl Origin {
    /// How listings name it.
    pub fn label(self) -> &'static str {
        match self {
            Origin::Person => "person",
            Origin::Workspace => "workspace",
        }
    }
}

/// One skill that loaded.
#[derive(Debug, Clone)]
pub struct Skill {
    /// Its name (the folder's).
    pub name: String,
    /// Its description, as written.
    pub description: String,
    /// Whose it is.
    pub origin: Origin,
    /// Its folder as a handle: every file of the skill is read through it,
    /// so nothing outside the folder can be reached by a path or a symlink.
    /// Its root is where the folder is on the host (lexically below the
    /// workspace for a workspace's skill).
    pub folder: Folder,
}

impl Skill {
    /// Its `SKILL.md`, read afresh through the folder's handle.
    pub fn skill_md(&self) -> std::io::Result<Vec<u8>> {
        self.folder.read(Path::new(SKILL_FILE), SKILL_FILE_LIMIT)
    }
}

/// A skill that did not load, or a folder that could not be read: which
/// file, what is wrong, what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file or folder at fault.
    pub path: PathBuf,
    /// What is wrong.
    pub what: String,
    /// What to do.
    pub fix: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({}); skipped", self.path.display(), self.what, self.fix)
    }
}

/// Every skill of a session, by name, with what went wrong finding them.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    skills: Vec<Skill>,
    problems: Vec<Problem>,
    clashes: Vec<String>,
}

impl Skills {
    /// The person's skills (`config.person_dir`), then the workspace's
    /// (`.clix/skills/`, `.agents/skills/`, read through `workspace`'s
    /// handle only). A name found twice keeps the first (the person's over
    /// the workspace's), and the clash is reported.
    pub fn find(config: &SkillsConfig, workspace: Option<&Folder>) -> Skills {
        let mut found = Skills::default();
        if let Some(dir) = &config.person_dir {
            found.person(dir);
        }
        if let Some(ws) = workspace {
            for rel in WORKSPACE_FOLDERS {
                found.workspace(ws, Path::new(rel));
            }
        }
        found.skills.sort_by(|a, b| a.name.cmp(&b.name));
        tracing::debug!(
            skills = found.skills.len(),
            problems = found.problems.len(),
            clashes = found.clashes.len(),
            "skills found"
        );
        found
    }

    /// Every skill, sorted by name.
    pub fn all(&self) -> &[Skill] {
        &self.skills
    }

    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// Skills that did not load, and folders that could not be read.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// Names found twice, and which one won: one line each.
    pub fn clashes(&self) -> &[String] {
        &self.clashes
    }

    /// The person's folder: theirs, so a skill folder there may be a
    /// symlink to where they keep it.
    fn person(&mut self, dir: &Path) {
        let root = match Folder::open(dir) {
            Ok(root) => root,
            Err(e) if e.kind() == ErrorKind::NotFound => return,
            Err(e) => return self.unreadable(dir, &e),
        };
        for (name, entry) in listing(&root, Path::new("."), self) {
            if !matches!(entry.kind, Kind::Dir | Kind::Symlink) {
                continue;
            }
            let path = root.root().join(&name);
            match Folder::open(&path) {
                Ok(folder) => self.add(folder, &name, Origin::Person),
                Err(e) if e.kind() == ErrorKind::NotADirectory => {}
                Err(e) => self.unreadable(&path, &e),
            }
        }
    }

    /// One of the workspace's folders: every path resolved beneath its
    /// handle, so a skill folder that is a symlink out of it is refused.
    fn workspace(&mut self, ws: &Folder, rel: &Path) {
        let base = match ws.open_dir(rel) {
            Ok(base) => base,
            Err(e) if e.kind() == ErrorKind::NotFound => return,
            Err(e) => return self.unreadable(&ws.root().join(rel), &e),
        };
        for (name, entry) in listing(&base, Path::new("."), self) {
            if !matches!(entry.kind, Kind::Dir | Kind::Symlink) {
                continue;
            }
            // Through the workspace's handle: a link to elsewhere inside it is followed.
            match ws.open_dir(&rel.join(&name)) {
                Ok(folder) => self.add(folder, &name, Origin::Workspace),
                Err(e) if e.kind() == ErrorKind::NotADirectory => {}
                Err(e) => self.problems.push(Problem {
                    path: base.root().join(&name),
                    what: e.to_string(),
                    fix: "put the skill's folder itself here; clix does not follow a workspace's symlinks out of it"
                        .into(),
                }),
            }
        }
    }

    /// The skill in `folder` (named `name` in its parent), checked.
    fn add(&mut self, folder: Folder, name: &str, origin: Origin) {
        let file = folder.root().join(SKILL_FILE);
        let text = match folder.read(Path::new(SKILL_FILE), SKILL_FILE_LIMIT) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return self.problems.push(Problem {
                    path: file,
                    what: format!("no {SKILL_FILE} in this folder"),
                    fix: format!("add {SKILL_FILE} (front matter `name`, `description`, then instructions)"),
                });
            }
            Err(e) => return self.unreadable(&file, &e),
        };
        let Ok(text) = String::from_utf8(text) else {
            return self.problems.push(Problem {
                path: file,
                what: "not UTF-8 text".into(),
                fix: "save it as UTF-8".into(),
            });
        };
        let front = match parse_skill_md(&text, name) {
            Ok(front) => front,
            Err(faults) => {
                let what = faults.iter().map(|f| f.what.as_str()).collect::<Vec<_>>().join("; ");
                let fix = faults.iter().map(|f| f.fix.as_str()).collect::<Vec<_>>().join("; ");
                tracing::debug!(file = %file.display(), problem = %what, "a skill did not load");
                return self.problems.push(Problem { path: file, what, fix });
            }
        };
        if let Some(winner) = self.get(&front.name) {
            let line = format!(
                "skill {}: {} ({}) is hidden by {} ({}), which wins",
                front.name,
                folder.root().display(),
                origin.label(),
                winner.folder.root().display(),
                winner.origin.label()
            );
            tracing::debug!(skill = %front.name, "{line}");
            self.clashes.push(line);
            return;
        }
        self.skills.push(Skill { name: front.name, description: front.description, origin, folder });
    }

    fn unreadable(&mut self, path: &Path, error: &std::io::Error) {
        self.problems.push(Problem {
            path: path.to_path_buf(),
            what: format!("cannot be read: {error}"),
            fix: "check the folder's permissions, or remove it".into(),
        });
    }
}

/// The entries of `dir` in `folder`, or none (with the problem recorded).
fn listing(folder: &Folder, dir: &Path, skills: &mut Skills) -> Vec<(String, clix_workspace::Entry)> {
    match folder.read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            skills.unreadable(&folder.root().join(dir), &e);
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn skill(dir: &Path, name: &str, description: &str) {
        fs::create_dir_all(dir.join(name)).unwrap();
        fs::write(
            dir.join(name).join(SKILL_FILE),
            format!("---\nname: {name}\ndescription: {description}\n---\nDo.\n"),
        )
        .unwrap();
    }

    #[test]
    fn the_person_wins_a_clash_and_bad_skills_are_reported_and_skipped() {
        let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let person = home.path().join(PERSON_FOLDER);
        skill(&person, "shared", "the person's");
        skill(&ws.path().join(".clix/skills"), "shared", "the workspace's");
        skill(&ws.path().join(".clix/skills"), "local", "only here");
        skill(&ws.path().join(".agents/skills"), "local", "hidden by .clix");
        skill(&ws.path().join(".agents/skills"), "other", "from .agents");
        fs::create_dir_all(ws.path().join(".clix/skills/broken")).unwrap();
        fs::write(ws.path().join(".clix/skills/broken/SKILL.md"), "no front matter\n").unwrap();
        fs::create_dir_all(ws.path().join(".clix/skills/empty")).unwrap();
        fs::write(ws.path().join(".clix/skills/README.md"), "not a skill\n").unwrap();
        let config = SkillsConfig { person_dir: Some(person), level0_bytes: 2048 };
        let found = Skills::find(&config, Some(&Folder::open(ws.path()).unwrap()));
        let names: Vec<(&str, &str, Origin)> =
            found.all().iter().map(|s| (s.name.as_str(), s.description.as_str(), s.origin)).collect();
        assert_eq!(
            names,
            [
                ("local", "only here", Origin::Workspace),
                ("other", "from .agents", Origin::Workspace),
                ("shared", "the person's", Origin::Person),
            ]
        );
        assert_eq!(found.clashes().len(), 2, "{:?}", found.clashes());
        assert!(found.clashes().iter().any(|c| c.starts_with("skill shared:") && c.contains("(person), which wins")));
        let problems: Vec<String> = found.problems().iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("broken/SKILL.md: no front matter")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("empty/SKILL.md: no SKILL.md")), "{problems:?}");
    }

    #[test]
    fn a_workspace_skill_folder_linked_outside_is_not_followed() {
        let (outside, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        skill(outside.path(), "secret", "outside the workspace");
        let skills = ws.path().join(".clix/skills");
        fs::create_dir_all(&skills).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), skills.join("secret")).unwrap();
        // A relative link that stays inside is an ordinary folder of the workspace.
        skill(ws.path(), "inside", "kept in the workspace");
        std::os::unix::fs::symlink("../../inside", skills.join("inside")).unwrap();
        let found = Skills::find(&SkillsConfig::default(), Some(&Folder::open(ws.path()).unwrap()));
        let names: Vec<&str> = found.all().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["inside"], "{:?}", found.problems());
        let problem = found.problems().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
        assert!(problem.contains("secret") && problem.contains("leads outside the workspace"), "{problem}");
    }
}
