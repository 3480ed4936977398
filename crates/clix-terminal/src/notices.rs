//! An engine's notices (the secret stores it hides, skills that did not
//! load), said on stderr once per workspace.

/// Says each of `engine`'s notices on stderr (`clix: …`), once per
/// workspace: a notice already said there stays quiet until the set
/// changes, so `clix run` after `clix run` does not repeat it. What was said
/// is kept in clix's state folder; if it cannot be kept, the notices are
/// said every time rather than never.
pub fn tell_notices(paths: &clix_config::Paths, engine: &clix_engine::Engine) {
    use std::hash::{Hash, Hasher};
    let notices = engine.notices();
    if notices.is_empty() {
        return;
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.shell().folder().root().hash(&mut hasher);
    let file = paths.state_dir.join("said").join(format!("{:016x}", hasher.finish()));
    let said = std::fs::read_to_string(&file).unwrap_or_default();
    for notice in notices.iter().filter(|n| !said.lines().any(|s| s == n.as_str())) {
        eprintln!("clix: {notice}");
    }
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&file, notices.join("\n")));
    }
}
