//! A scratch folder per test, removed when the test ends.

use std::path::PathBuf;

/// A folder under the temporary directory, named after the calling test's file, `name` and the process.
pub struct Scratch(pub PathBuf);

impl Scratch {
    #[track_caller]
    pub fn new(name: &str) -> Scratch {
        let file = std::path::Path::new(std::panic::Location::caller().file());
        let topic = file.file_stem().and_then(|s| s.to_str()).unwrap_or("test");
        let d =
            std::env::temp_dir().join(format!("ringbench-{topic}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    /// The path of `f` inside the folder.
    pub fn path(&self, f: &str) -> String {
        self.0.join(f).to_str().unwrap().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
