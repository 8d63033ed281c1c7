"""A FastMCP 4.0 server of a skills folder (SkillsDirectoryProvider), over stdio: the server
FastMCP users run. test/e2e/python-clients.test.ts pulls from it with `skill-mcp pull`, which
has no SEP-2640 extension to use here and goes by its resources and `_manifest`.

  fastmcp_server.py SKILLS_ROOT
"""

import sys

from fastmcp import FastMCP
from fastmcp.server.providers.skills import SkillsDirectoryProvider

mcp = FastMCP("fastmcp-skills")
mcp.add_provider(SkillsDirectoryProvider(roots=sys.argv[1]))
mcp.run(transport="stdio", show_banner=False)
