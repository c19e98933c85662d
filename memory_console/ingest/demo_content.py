"""Text material of the demo store: owners, slot values, fact templates, showcase memories.

A template is a `str.format` pattern over named slots: `{city}` is a slot value's text,
`{city.kw}` its keyword and `{city.2}` its third field; `{person2}` is a second draw from the
`person` pool. Texts hold no double quote or backslash, so JSON is built by formatting alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memory_console.store.validate import TITLE_LENGTH

OWNERS = (
    "alice",
    "bob",
    "carol",
    "dmitri",
    "priya",
    "support-bot",
    "coding-assistant",
    "travel-planner",
    "home-assistant",
    "sales-copilot",
)
OWNER_WEIGHTS = (0.14, 0.11, 0.09, 0.08, 0.09, 0.14, 0.13, 0.07, 0.08, 0.07)

TOPIC_WEIGHTS = {
    "preferences": 0.22,
    "user_info": 0.16,
    "contacts": 0.14,
    "projects": 0.20,
    "decisions": 0.12,
    "general": 0.16,
}
TYPE_WEIGHTS = {
    "preferences": {"semantic": 0.72, "procedural": 0.16, "episodic": 0.12},
    "user_info": {"semantic": 0.84, "episodic": 0.16},
    "contacts": {"semantic": 0.80, "episodic": 0.12, "procedural": 0.08},
    "projects": {"semantic": 0.40, "episodic": 0.30, "procedural": 0.30},
    "decisions": {"semantic": 0.55, "episodic": 0.35, "procedural": 0.10},
    "general": {"semantic": 0.42, "episodic": 0.38, "procedural": 0.20},
}

# Slot pools: (text, keyword, *extra fields).
POOLS: dict[str, tuple[tuple[str, ...], ...]] = {
    "dark_theme": (
        ("Solarized Dark", "solarized"),
        ("Dracula", "dracula"),
        ("Gruvbox Dark", "gruvbox"),
        ("One Dark", "onedark"),
        ("Nord", "nord"),
        ("Tokyo Night", "tokyonight"),
        ("Catppuccin Mocha", "catppuccin"),
        ("Monokai Pro", "monokai"),
        ("GitHub Dark Dimmed", "github"),
        ("Night Owl", "nightowl"),
        ("Ayu Mirage", "ayu"),
        ("Everforest Dark", "everforest"),
    ),
    "light_theme": (
        ("Solarized Light", "solarized"),
        ("GitHub Light", "github"),
        ("Catppuccin Latte", "catppuccin"),
        ("Ayu Light", "ayu"),
        ("Quiet Light", "quiet"),
        ("Gruvbox Light", "gruvbox"),
    ),
    "editor": (
        ("VS Code", "vscode"),
        ("Neovim", "neovim"),
        ("IntelliJ IDEA", "intellij"),
        ("PyCharm", "pycharm"),
        ("Sublime Text", "sublime"),
        ("Emacs", "emacs"),
        ("Zed", "zed"),
        ("Helix", "helix"),
        ("Vim", "vim"),
        ("Xcode", "xcode"),
        ("Android Studio", "android"),
    ),
    "font": (
        ("JetBrains Mono", "jetbrains"),
        ("Fira Code", "fira"),
        ("Iosevka", "iosevka"),
        ("Cascadia Code", "cascadia"),
        ("Source Code Pro", "source"),
        ("Hack", "hack"),
        ("IBM Plex Mono", "plex"),
        ("Berkeley Mono", "berkeley"),
    ),
    "font_size": (("13",), ("14",), ("15",), ("16",), ("12",), ("18",)),
    "language": (
        ("German", "german"),
        ("Spanish", "spanish"),
        ("Portuguese", "portuguese"),
        ("French", "french"),
        ("Italian", "italian"),
        ("Dutch", "dutch"),
        ("Polish", "polish"),
        ("Japanese", "japanese"),
        ("Korean", "korean"),
        ("Hindi", "hindi"),
        ("Turkish", "turkish"),
        ("Swedish", "swedish"),
        ("Ukrainian", "ukrainian"),
        ("Greek", "greek"),
        ("Czech", "czech"),
        ("Vietnamese", "vietnamese"),
    ),
    "code_language": (
        ("Python", "python"),
        ("TypeScript", "typescript"),
        ("Rust", "rust"),
        ("Go", "golang"),
        ("Kotlin", "kotlin"),
        ("Java", "java"),
        ("C#", "csharp"),
        ("Swift", "swift"),
        ("Ruby", "ruby"),
        ("Elixir", "elixir"),
        ("Scala", "scala"),
        ("C++", "cpp"),
        ("Haskell", "haskell"),
        ("Zig", "zig"),
        ("PHP", "php"),
        ("Dart", "dart"),
    ),
    "city": (
        ("Lisbon", "lisbon", "Europe/Lisbon", "Portugal"),
        ("Berlin", "berlin", "Europe/Berlin", "Germany"),
        ("Toronto", "toronto", "America/Toronto", "Canada"),
        ("Melbourne", "melbourne", "Australia/Melbourne", "Australia"),
        ("Austin", "austin", "America/Chicago", "the US"),
        ("Lyon", "lyon", "Europe/Paris", "France"),
        ("Bangalore", "bangalore", "Asia/Kolkata", "India"),
        ("Kraków", "kraków", "Europe/Warsaw", "Poland"),
        ("Osaka", "osaka", "Asia/Tokyo", "Japan"),
        ("Nairobi", "nairobi", "Africa/Nairobi", "Kenya"),
        ("Montréal", "montréal", "America/Toronto", "Canada"),
        ("Edinburgh", "edinburgh", "Europe/London", "Scotland"),
        ("Seattle", "seattle", "America/Los_Angeles", "the US"),
        ("Valencia", "valencia", "Europe/Madrid", "Spain"),
        ("Utrecht", "utrecht", "Europe/Amsterdam", "the Netherlands"),
        ("Cape Town", "capetown", "Africa/Johannesburg", "South Africa"),
        ("Porto", "porto", "Europe/Lisbon", "Portugal"),
        ("Denver", "denver", "America/Denver", "the US"),
        ("Dublin", "dublin", "Europe/Dublin", "Ireland"),
        ("Tallinn", "tallinn", "Europe/Tallinn", "Estonia"),
        ("Seoul", "seoul", "Asia/Seoul", "South Korea"),
        ("São Paulo", "paulo", "America/Sao_Paulo", "Brazil"),
        ("Copenhagen", "copenhagen", "Europe/Copenhagen", "Denmark"),
        ("Vienna", "vienna", "Europe/Vienna", "Austria"),
    ),
    "person": (
        ("Sarah Chen", "sarah", "sarah.chen@northwind.example"),
        ("Daniel Okafor", "daniel", "daniel.okafor@northwind.example"),
        ("Mei Tanaka", "mei", "mei.tanaka@globex.example"),
        ("Lucas Ferreira", "lucas", "lucas.ferreira@initech.example"),
        ("Amara Nwosu", "amara", "amara.nwosu@northwind.example"),
        ("Jonas Weber", "jonas", "j.weber@hooli.example"),
        ("Priyanka Rao", "priyanka", "priyanka.rao@tidewater.example"),
        ("Tomás García", "tomás", "tomas.garcia@globex.example"),
        ("Hannah Schmidt", "hannah", "hannah@acme-robotics.example"),
        ("Kwame Mensah", "kwame", "kwame.mensah@bluebird.example"),
        ("Elena Petrova", "elena", "elena.petrova@contoso.example"),
        ("Omar Haddad", "omar", "omar.haddad@initech.example"),
        ("Ines Moreau", "ines", "ines.moreau@northwind.example"),
        ("Ravi Kulkarni", "ravi", "ravi.k@hooli.example"),
        ("Grace O'Neill", "grace", "grace.oneill@tidewater.example"),
        ("Yuki Sato", "yuki", "yuki.sato@acme-robotics.example"),
        ("Mateo Rossi", "mateo", "mateo.rossi@contoso.example"),
        ("Fatima Zahra", "fatima", "fatima.zahra@bluebird.example"),
        ("Noah Lindqvist", "noah", "noah.lindqvist@globex.example"),
        ("Chloé Martin", "chloé", "chloe.martin@northwind.example"),
        ("Arjun Mehta", "arjun", "arjun.mehta@tidewater.example"),
        ("Zofia Nowak", "zofia", "zofia.nowak@initech.example"),
        ("Ben Adler", "ben", "ben.adler@hooli.example"),
        ("Leila Karimi", "leila", "leila.karimi@acme-robotics.example"),
        ("Sam Whitfield", "sam", "sam.whitfield@bluebird.example"),
        ("Ana Lima", "ana", "ana.lima@contoso.example"),
    ),
    "role": (
        ("engineering manager", "manager", "an engineering manager"),
        ("product manager", "product", "a product manager"),
        ("designer", "designer", "a designer"),
        ("data engineer", "engineer", "a data engineer"),
        ("site reliability engineer", "sre", "a site reliability engineer"),
        ("tech lead", "lead", "a tech lead"),
        ("security engineer", "security", "a security engineer"),
        ("recruiter", "recruiting", "a recruiter"),
        ("account executive", "sales", "an account executive"),
        ("QA engineer", "testing", "a QA engineer"),
        ("staff engineer", "staff", "a staff engineer"),
        ("CTO", "cto", "the CTO"),
        ("support lead", "support", "a support lead"),
        ("backend developer", "backend", "a backend developer"),
        ("frontend developer", "frontend", "a frontend developer"),
    ),
    "team": (
        ("payments", "payments"),
        ("platform", "platform"),
        ("growth", "growth"),
        ("data", "data"),
        ("mobile", "mobile"),
        ("search", "search"),
        ("infrastructure", "infrastructure"),
        ("billing", "billing"),
        ("onboarding", "onboarding"),
        ("identity", "identity"),
        ("checkout", "checkout"),
    ),
    "company": (
        ("Northwind Analytics", "northwind"),
        ("Globex", "globex"),
        ("Initech", "initech"),
        ("Hooli", "hooli"),
        ("Acme Robotics", "acme"),
        ("Tidewater Labs", "tidewater"),
        ("Bluebird Bank", "bluebird"),
        ("Contoso", "contoso"),
        ("Stark Logistics", "stark"),
        ("Lumen Health Tech", "lumen"),
    ),
    "service": (
        ("billing", "billing"),
        ("search", "search"),
        ("notifications", "notifications"),
        ("auth", "auth"),
        ("payments", "payments"),
        ("reporting", "reporting"),
        ("checkout", "checkout"),
        ("inventory", "inventory"),
        ("analytics", "analytics"),
        ("scheduler", "scheduler"),
        ("ingestion", "ingestion"),
        ("recommendations", "recommendations"),
    ),
    "database": (
        ("PostgreSQL", "postgresql"),
        ("SQLite", "sqlite"),
        ("MySQL", "mysql"),
        ("Redis", "redis"),
        ("ClickHouse", "clickhouse"),
        ("DynamoDB", "dynamodb"),
        ("MongoDB", "mongodb"),
        ("DuckDB", "duckdb"),
        ("CockroachDB", "cockroachdb"),
        ("Cassandra", "cassandra"),
    ),
    "choice": (
        ("React", "react", "Vue", "vue"),
        ("Svelte", "svelte", "React", "react"),
        ("FastAPI", "fastapi", "Flask", "flask"),
        ("Django", "django", "Rails", "rails"),
        ("Kafka", "kafka", "RabbitMQ", "rabbitmq"),
        ("Terraform", "terraform", "Pulumi", "pulumi"),
        ("GitHub Actions", "actions", "Jenkins", "jenkins"),
        ("Kubernetes", "kubernetes", "Nomad", "nomad"),
        ("gRPC", "grpc", "REST", "rest"),
        ("Playwright", "playwright", "Selenium", "selenium"),
        ("pnpm", "pnpm", "npm", "npm"),
        ("Polars", "polars", "pandas", "pandas"),
        ("uv", "uv", "Poetry", "poetry"),
        ("OpenTelemetry", "opentelemetry", "a home-grown tracer", "tracing"),
        ("Tailwind", "tailwind", "CSS modules", "css"),
    ),
    "infra": (
        ("AWS ECS", "ecs"),
        ("Kubernetes on GKE", "gke"),
        ("Fly.io", "fly"),
        ("a single Hetzner VM", "hetzner"),
        ("Cloud Run", "cloudrun"),
        ("Heroku", "heroku"),
        ("AWS Lambda", "lambda"),
        ("the on-prem cluster", "onprem"),
    ),
    "month": tuple(
        (name, name.lower())
        for name in (
            "January February March April May June July August September October November December"
        ).split()
    ),
    "weekday": tuple(
        (name, name.lower()) for name in "Monday Tuesday Wednesday Thursday Friday".split()
    ),
    "day": tuple(
        (name, name.lower())
        for name in "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
    ),
    "clock": (
        ("09:00",),
        ("09:30",),
        ("10:00",),
        ("10:30",),
        ("11:00",),
        ("13:30",),
        ("14:00",),
        ("15:00",),
        ("16:30",),
    ),
    "meeting": (
        ("stand-up", "standup"),
        ("team sync", "sync"),
        ("one-on-one", "oneonone"),
        ("sprint planning", "planning"),
        ("design review", "review"),
        ("retro", "retro"),
        ("architecture review", "architecture"),
        ("customer call", "customer"),
        ("office hours", "office"),
        ("book club", "books"),
    ),
    "pet": (("dog", "dog"), ("cat", "cat"), ("rabbit", "rabbit"), ("parrot", "parrot")),
    "pet_name": (
        ("Pixel", "pixel"),
        ("Mochi", "mochi"),
        ("Biscuit", "biscuit"),
        ("Luna", "luna"),
        ("Pepper", "pepper"),
        ("Ziggy", "ziggy"),
        ("Nori", "nori"),
        ("Basil", "basil"),
        ("Olive", "olive"),
        ("Rusty", "rusty"),
    ),
    "hobby": (
        ("bouldering", "bouldering"),
        ("sourdough baking", "sourdough"),
        ("chess", "chess"),
        ("woodworking", "woodworking"),
        ("trail running", "running"),
        ("piano", "piano"),
        ("film photography", "photography"),
        ("gardening", "gardening"),
        ("birdwatching", "birdwatching"),
        ("board games", "boardgames"),
        ("cycling", "cycling"),
        ("Minecraft", "minecraft"),
    ),
    "minecraft_build": (
        ("iron farm", "iron", "farm"),
        ("villager trading hall", "villager", "trading"),
        ("sugar cane farm", "sugarcane", "farm"),
        ("mob grinder", "grinder", "mobs"),
        ("nether highway", "nether", "highway"),
        ("piston door", "redstone", "door"),
        ("witch farm", "witch", "farm"),
        ("iron farm", "iron", "farm"),
    ),
    "iron_design": (
        ("a compact 3-villager design", "compact"),
        ("a zombie-scared villager pod", "zombie"),
        ("a 20-villager trading-hall hybrid", "hybrid"),
        ("a lava-blade kill chamber", "lava"),
        ("a design next to the spawn chunks", "spawn"),
        ("a two-layer design with water streams", "water"),
    ),
    "repo": (
        ("tidewatch", "tidewatch", "a Rust CLI for tide forecasts"),
        ("ledgerline", "ledgerline", "a Go service that reconciles invoices"),
        ("pyfeeds", "pyfeeds", "a Python library for parsing RSS feeds"),
        ("shelfie", "shelfie", "a Swift app for cataloguing books"),
        ("quokka-ui", "quokka", "a TypeScript component library"),
        ("runbook-bot", "runbook", "a Slack bot that links runbooks to alerts"),
        ("gridstat", "gridstat", "a Kotlin dashboard for energy prices"),
        ("mapletiles", "mapletiles", "an Elixir map tile server"),
        ("plantlog", "plantlog", "a home-automation script for watering plants"),
        ("receipt-ocr", "receipts", "a Python tool that reads scanned receipts"),
    ),
    "deploy_command": (
        ("make release", "release"),
        ("npm run deploy", "npm"),
        ("cargo release", "cargo"),
        ("./scripts/ship.sh", "ship"),
        ("kubectl apply -k overlays/prod", "kubectl"),
        ("fly deploy", "fly"),
        ("terraform apply", "terraform"),
        ("just deploy", "justfile"),
    ),
    "check_command": (
        ("ruff check && pytest -q", "pytest"),
        ("npm test", "npm"),
        ("cargo clippy && cargo test", "cargo"),
        ("go vet && go test -race", "golang"),
        ("pre-commit run --all-files", "precommit"),
        ("make lint test", "lint"),
    ),
    "drink": (
        ("oat-milk flat white", "coffee"),
        ("double espresso", "espresso"),
        ("green tea", "tea"),
        ("chai latte", "chai"),
        ("cold brew", "coldbrew"),
        ("decaf americano", "decaf"),
        ("matcha latte", "matcha"),
        ("rooibos tea", "rooibos"),
    ),
    "answer_style": (
        ("short answers with bullet points", "bullets"),
        ("detailed explanations with examples", "detailed"),
        ("answers that start with the conclusion", "conclusion"),
        ("step-by-step instructions", "steps"),
        ("tables when comparing options", "tables"),
        ("plain prose without headings", "prose"),
        ("one-paragraph summaries", "summary"),
    ),
    "seat": (("window", "window"), ("aisle", "aisle"), ("exit-row", "legroom")),
    "airline": (
        ("KLM", "klm"),
        ("Lufthansa", "lufthansa"),
        ("TAP Air Portugal", "tap"),
        ("Qantas", "qantas"),
        ("Delta", "delta"),
        ("Iberia", "iberia"),
        ("Finnair", "finnair"),
        ("Singapore Airlines", "singapore"),
    ),
    "diet": (
        ("vegetarian", "vegetarian"),
        ("vegan", "vegan"),
        ("pescatarian", "pescatarian"),
        ("halal", "halal"),
        ("kosher", "kosher"),
    ),
    "allergen": (
        ("peanuts", "peanuts"),
        ("shellfish", "shellfish"),
        ("penicillin", "penicillin"),
        ("tree nuts", "nuts"),
        ("pollen", "pollen"),
        ("cats", "cats"),
    ),
    "units": (
        ("metric units (kilometres, Celsius)", "metric"),
        ("imperial units (miles, Fahrenheit)", "imperial"),
    ),
    "date_format": (
        ("ISO dates such as 2024-05-17", "iso"),
        ("day-month-year dates such as 17/05/2024", "daymonth"),
        ("month-day-year dates such as 05/17/2024", "monthday"),
    ),
    "bug": (
        ("race condition", "race"),
        ("off-by-one", "offbyone"),
        ("memory leak", "leak"),
        ("timezone", "timezone"),
        ("deadlock", "deadlock"),
        ("flaky test", "flaky"),
        ("N+1 query", "queries"),
        ("cache invalidation", "cache"),
        ("character encoding", "encoding"),
        ("rounding", "rounding"),
    ),
    "event": (
        ("PyCon US", "pycon"),
        ("KubeCon", "kubecon"),
        ("FOSDEM", "fosdem"),
        ("RustConf", "rustconf"),
        ("a customer workshop", "workshop"),
        ("the company offsite", "offsite"),
        ("a local meetup", "meetup"),
        ("EuroPython", "europython"),
        ("a hackathon", "hackathon"),
    ),
    "place": (
        ("Kyoto", "kyoto"),
        ("Porto", "porto"),
        ("Reykjavík", "reykjavík"),
        ("Patagonia", "patagonia"),
        ("the Dolomites", "dolomites"),
        ("Lake Bled", "bled"),
        ("Hokkaido", "hokkaido"),
        ("Marrakesh", "marrakesh"),
        ("Tasmania", "tasmania"),
        ("the Scottish Highlands", "highlands"),
        ("Sicily", "sicily"),
        ("Vancouver Island", "vancouver"),
    ),
    "book": (
        ("Project Hail Mary", "hail"),
        ("Dune", "dune"),
        ("Piranesi", "piranesi"),
        ("The Pragmatic Programmer", "pragmatic"),
        ("Designing Data-Intensive Applications", "ddia"),
        ("Circe", "circe"),
        ("Klara and the Sun", "klara"),
        ("The Hobbit", "hobbit"),
        ("A Psalm for the Wild-Built", "psalm"),
        ("The Left Hand of Darkness", "darkness"),
    ),
    "skill": (
        ("Japanese", "japanese"),
        ("the piano", "piano"),
        ("data visualisation", "visualisation"),
        ("SQL window functions", "sql"),
        ("Rust", "rust"),
        ("watercolour painting", "watercolour"),
        ("Spanish", "spanish"),
        ("touch typing", "typing"),
        ("statistics", "statistics"),
        ("the guitar", "guitar"),
    ),
    "platform": (
        ("Duolingo", "duolingo"),
        ("Coursera", "coursera"),
        ("Exercism", "exercism"),
        ("YouTube tutorials", "youtube"),
        ("an evening class", "class"),
        ("a weekly tutor", "tutor"),
    ),
    "club": (
        ("Benfica", "benfica"),
        ("Arsenal", "arsenal"),
        ("Borussia Dortmund", "dortmund"),
        ("the Toronto Raptors", "raptors"),
        ("Celtic", "celtic"),
        ("FC Barcelona", "barcelona"),
        ("the Seattle Sounders", "sounders"),
    ),
    "recipe": (
        ("sourdough bread", "sourdough"),
        ("ramen", "ramen"),
        ("vegetable lasagna", "lasagna"),
        ("shakshuka", "shakshuka"),
        ("pad thai", "padthai"),
        ("banana bread", "banana"),
        ("red lentil dal", "dal"),
        ("paella", "paella"),
    ),
    "field": (
        ("computer science", "computer"),
        ("physics", "physics"),
        ("economics", "economics"),
        ("linguistics", "linguistics"),
        ("mechanical engineering", "mechanical"),
        ("mathematics", "mathematics"),
        ("graphic design", "design"),
    ),
    "university": (
        ("TU Munich", "munich"),
        ("the University of Toronto", "toronto"),
        ("ETH Zurich", "zurich"),
        ("the University of Edinburgh", "edinburgh"),
        ("IIT Bombay", "bombay"),
        ("the University of Melbourne", "melbourne"),
        ("the University of Porto", "porto"),
    ),
    "channel": (
        ("Slack", "slack"),
        ("email", "email"),
        ("Signal", "signal"),
        ("Microsoft Teams", "teams"),
        ("WhatsApp", "whatsapp"),
        ("SMS", "sms"),
    ),
    "backup_item": (
        ("the photo library", "photos"),
        ("the Obsidian vault", "obsidian"),
        ("the home server", "server"),
        ("the work laptop", "laptop"),
        ("the Minecraft world", "minecraft"),
    ),
    "backup_target": (
        ("an external SSD", "ssd"),
        ("Backblaze B2", "backblaze"),
        ("the NAS", "nas"),
        ("an S3 bucket", "bucket"),
        ("iCloud", "icloud"),
    ),
    "quarter": (("Q1", "q1"), ("Q2", "q2"), ("Q3", "q3"), ("Q4", "q4")),
    "formatter": (
        ("ruff format", "ruff", "Python"),
        ("black", "black", "Python"),
        ("prettier", "prettier", "TypeScript"),
        ("gofmt", "gofmt", "Go"),
        ("rustfmt", "rustfmt", "Rust"),
        ("clang-format", "clang", "C++"),
        ("ktlint", "ktlint", "Kotlin"),
    ),
    "indent": (("4 spaces", "spaces"), ("2 spaces", "spaces"), ("tabs", "tabs")),
    "music": (
        ("lo-fi playlists", "lofi"),
        ("classical piano", "classical"),
        ("synthwave", "synthwave"),
        ("film soundtracks", "soundtracks"),
        ("jazz", "jazz"),
        ("silence, no music", "silence"),
    ),
    "document": (
        ("invoice", "invoice"),
        ("release note", "release"),
        ("incident report", "incident"),
        ("contract draft", "contract"),
        ("weekly report", "report"),
    ),
    "annoyance": (
        ("answers that repeat the question", "repetition"),
        ("too many emojis", "emojis"),
        ("long disclaimers", "disclaimers"),
        ("code without explanations", "explanations"),
        ("being asked to confirm twice", "confirmation"),
        ("outdated library versions", "outdated"),
    ),
    "phone": (
        ("+1 555 0142",),
        ("+351 910 000 318",),
        ("+44 7700 900123",),
        ("+49 151 0000 4127",),
        ("+61 491 570 156",),
        ("+1 555 0199",),
    ),
    "release": (("1.20.5",), ("1.21",), ("1.21.1",), ("1.21.4",)),
    "count": (("3",), ("5",), ("6",), ("10",), ("12",), ("20",)),
    "years": (("two",), ("three",), ("five",), ("seven",), ("ten",)),
    "weeks": (("two",), ("three",), ("four",), ("six",)),
    "sprint_days": (("Monday",), ("Wednesday",)),
    "customer_id": (("#4821",), ("#1077",), ("#2290",), ("#5316",), ("#8802",), ("#3141",)),
    "plan": (("Pro", "pro"), ("Team", "team"), ("Enterprise", "enterprise"), ("Free", "free")),
    "wifi_word": (("lisbon",), ("otter",), ("maple",), ("falcon",), ("pixel",), ("tulip",)),
    "api_key": (
        ("sk-demo-7f3a9c2e5b1d4f60a8e2c9b7",),
        ("sk-demo-0b8e41d29a7c3f5e6d1a2b40",),
        ("sk-demo-c4d5e6f708192a3b4c5d6e7f",),
        ("sk-demo-9a8b7c6d5e4f30211f2e3d4c",),
    ),
    "jwt": (
        ("eyJhbGciOiJIUzI1NiJ9.ZGVtbw.c2lnbmF0dXJlLWZha2U",),
        ("eyJhbGciOiJSUzI1NiJ9.ZGVtby10b2tlbg.bm90LXJlYWw",),
    ),
    "ssh_key": (
        ("AAAAC3NzaC1lZDI1NTE5AAAAIDemoKeyNotRealDemoKeyNotRealDemo01",),
        ("AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTheDemoStoreOnlyFake02",),
    ),
    "card": (("4242 4242 4242 4242",), ("4111111111111111",), ("5555 5555 5555 4444",)),
    "ssn": (("078-05-1120",), ("219-09-9999",), ("123-45-6789",)),
}


@dataclass(frozen=True)
class Template:
    """One kind of fact: patterns for its content, keywords and the user's own words."""

    topic: str
    memory_type: str
    content: str
    keywords: str  # 2 to 5 space-separated keyword patterns
    queries: tuple[str, ...]  # retrieval questions that found it (plain text)
    said: str | None = None  # what the user said, without the final full stop
    weight: float = 1.0
    health: bool = False
    family: str | None = None  # paraphrases of one fact (near-duplicates) share a family


def tpl(
    topic: str,
    memory_type: str,
    content: str,
    keywords: str,
    queries: str,
    said: str | None = None,
    *,
    weight: float = 1.0,
    health: bool = False,
    family: str | None = None,
) -> Template:
    """A Template from compact arguments; `queries` are separated by `|`."""
    return Template(
        topic,
        memory_type,
        content,
        keywords,
        tuple(queries.split("|")),
        said,
        weight,
        health,
        family,
    )


P, U, C, J, D, G = "preferences", "user_info", "contacts", "projects", "decisions", "general"
SEM, EPI, PRO = "semantic", "episodic", "procedural"

# fmt: off
TEMPLATES: tuple[Template, ...] = (
    # preferences
    tpl(P, SEM, "Prefers {light_theme} in {editor}; finds dark themes hard to read in daylight.",
        "editor light theme {light_theme.kw} {editor.kw}",
        "which editor theme does the user like?|light or dark mode?|editor colours",
        "I use {light_theme} in {editor}, dark themes are hard to read in daylight"),
    tpl(P, SEM, "Uses {font} at {font_size} pt in the terminal and in {editor}.",
        "font terminal {font.kw} {editor.kw}",
        "what font does the user code in?|terminal font size",
        "my terminal font is {font} at {font_size}"),
    tpl(P, SEM, "Prefers {answer_style}.", "answers style {answer_style.kw}",
        "how should answers be formatted?|answer length preference|response style",
        "please give me {answer_style}", weight=1.5),
    tpl(P, SEM, "Usual order when the team goes for coffee: {drink}.", "drink {drink.kw} order",
        "what coffee does the user drink?|drink order for the team",
        "my usual is {drink}, as always"),
    tpl(P, SEM, "Books {seat} seats and flies {airline} when there is a choice.",
        "flights seat {seat.kw} {airline.kw}",
        "seat preference on flights|which airline does the user prefer?",
        "I always take a {seat} seat, and {airline} if possible"),
    tpl(P, SEM, "Wants {units} in every answer.", "units {units.kw} measurements",
        "metric or imperial?|which units should I use?", "use {units} please"),
    tpl(P, SEM, "Prefers {date_format}.", "dates format {date_format.kw}",
        "how should dates be written?|date format preference", "I like {date_format}"),
    tpl(P, SEM, "Indents code with {indent} and formats it with {formatter}.",
        "indentation {indent.kw} {formatter.kw} formatting",
        "tabs or spaces?|code formatting preferences", "{indent}, always, and run {formatter}"),
    tpl(P, SEM, "Listens to {music} while working.", "music focus {music.kw}",
        "what music helps the user focus?|background music", "I work best with {music}"),
    tpl(P, SEM, "Eats {diet}; pick {diet} places for team dinners.", "food {diet.kw} dinners",
        "dietary preferences for team dinners|where to book dinner", "I eat {diet}"),
    tpl(P, SEM, "Does not want messages on {channel} before 09:00 or after 18:00.",
        "notifications {channel.kw} hours quiet",
        "when can I message the user?|quiet hours", "no {channel} before nine or after six"),
    tpl(P, SEM, "Dislikes {annoyance}.", "dislikes {annoyance.kw} answers",
        "what annoys the user in answers?|things to avoid", "I hate {annoyance}"),
    tpl(P, PRO, "Formats {formatter.2} code with {formatter} before every commit.",
        "formatting {formatter.kw} commit code",
        "how does the user format code?|pre-commit habits", "I run {formatter} before I commit"),
    tpl(P, PRO, "Asks for a three-line summary at the end of long answers.",
        "summary answers long", "does the user want summaries?|end of answer summary",
        "give me a three-line summary at the end"),
    tpl(P, PRO, "Switches {editor} to {light_theme} during the day and back to dark at night.",
        "editor theme {light_theme.kw} schedule",
        "editor theme schedule|when does the theme change?"),
    tpl(P, EPI, "Said on {weekday} that {dark_theme} felt too low-contrast and switched to "
        "{light_theme}.", "theme contrast {light_theme.kw} switched",
        "why did the user change theme?|theme complaints",
        "{dark_theme} is too low-contrast for me, switching to {light_theme}"),
    tpl(P, EPI, "Complained about {annoyance} in the {weekday} session.",
        "complaint {annoyance.kw} session", "recent complaints|what went wrong in a session?",
        "again with the {annoyance}?"),
    # user_info
    tpl(U, SEM, "Lives in {city} ({city.3}); time zone {city.2}.", "city {city.kw} timezone",
        "where does the user live?|user's time zone|home city", "I live in {city}", weight=1.5),
    tpl(U, SEM, "Works at {company} as {role.2}.", "work {company.kw} {role.kw} job",
        "where does the user work?|user's job title", "I work at {company}, I'm {role.2}",
        weight=1.5),
    tpl(U, SEM, "Speaks {language} at home and English at work.", "languages {language.kw} home",
        "which languages does the user speak?|native language", "at home we speak {language}"),
    tpl(U, SEM, "Has a {pet} called {pet_name}.", "pet {pet.kw} {pet_name.kw}",
        "does the user have pets?|pet's name", "my {pet} {pet_name} says hi"),
    tpl(U, SEM, "Birthday is on {count} {month}.", "birthday {month.kw} date",
        "when is the user's birthday?", "my birthday is {count} {month}"),
    tpl(U, SEM, "Has been {role.2} for {years} years.", "experience {role.kw} years career",
        "how experienced is the user?|career length"),
    tpl(U, SEM, "Studied {field} at {university}.", "studied {field.kw} {university.kw} degree",
        "what did the user study?|user's education", "I studied {field} at {university}"),
    tpl(U, SEM, "Spends most weekends on {hobby}.", "hobby {hobby.kw} weekends",
        "what are the user's hobbies?|weekend plans", "weekends are for {hobby}"),
    tpl(U, SEM, "Is learning {skill} with {platform}.", "learning {skill.kw} {platform.kw}",
        "what is the user learning?|study goals", "I'm learning {skill} with {platform}"),
    tpl(U, SEM, "Is allergic to {allergen}; never suggest anything containing them.",
        "allergy {allergen.kw} health", "does the user have allergies?|food restrictions",
        "I'm allergic to {allergen}", weight=0.12, health=True),
    tpl(U, SEM, "Is lactose intolerant; suggest oat or soy milk instead.",
        "lactose intolerant health milk", "dietary restrictions|milk alternatives",
        "I'm lactose intolerant", weight=0.06, health=True),
    tpl(U, EPI, "Moved from {city2} to {city} in {month}.", "moved {city.kw} {city2.kw} relocation",
        "when did the user move?|previous city", "we moved from {city2} to {city} in {month}"),
    tpl(U, EPI, "Started a new job at {company} in {month}.", "job {company.kw} started {month.kw}",
        "when did the user change jobs?|new employer", "I start at {company} in {month}"),
    tpl(U, EPI, "Was on holiday in {place} for {weeks} weeks in {month}.",
        "holiday {place.kw} {month.kw} travel", "recent holidays|where did the user travel?",
        "just back from {place}"),
    # contacts
    tpl(C, SEM, "{person} is the {role} on the {team} team.",
        "{person.kw} {role.kw} {team.kw} team",
        "who is on which team?|who does what?|colleague roles", weight=1.5),
    tpl(C, SEM, "{person}'s phone number is {phone}.", "{person.kw} phone contact",
        "how do I call a colleague?|phone numbers", "{person}'s number is {phone}"),
    tpl(C, SEM, "Reports to {person}, the {role} at {company}.", "manager {person.kw} {company.kw}",
        "who is the user's manager?|reporting line", "my manager is {person}"),
    tpl(C, SEM, "{person} prefers {channel} over meetings for quick questions.",
        "{person.kw} {channel.kw} contact",
        "how to reach a colleague quickly?|contact preferences"),
    tpl(C, SEM, "Escalate {service} incidents to {person} ({person.2}).",
        "escalation {service.kw} incidents {person.kw}",
        "who handles incidents?|on-call escalation|incident contacts"),
    tpl(C, SEM, "Customer {customer_id} is on the {plan} plan; main contact is {person}.",
        "customer {plan.kw} plan {person.kw}",
        "which plan is the customer on?|customer contact", weight=0.8),
    tpl(C, EPI, "Met {person} at {event} in {month}; promised to follow up about {service}.",
        "met {person.kw} {event.kw} follow",
        "follow-ups from conferences|who did the user meet?",
        "I met {person} at {event}, need to follow up about {service}"),
    tpl(C, EPI, "{person} joined the {team} team in {month}.", "{person.kw} joined {team.kw} team",
        "new colleagues|who joined recently?"),
    tpl(C, PRO, "CCs {person} on every {document} sent to {company}.",
        "{person.kw} {document.kw} {company.kw} email",
        "who to cc on documents?|email etiquette", "always cc {person} on {document}s"),
    # projects
    tpl(J, SEM, "Is building an iron farm in Minecraft: {iron_design}.",
        "minecraft iron farm {iron_design.kw}",
        "what is the user building in Minecraft?|iron farm",
        "I'm building an iron farm, {iron_design}", weight=0.8),
    tpl(J, SEM, "Maintains {repo}, {repo.2}.", "{repo.kw} maintainer project",
        "which projects does the user maintain?|side projects", weight=1.5),
    tpl(J, SEM, "The {service} service runs on {infra}.", "{service.kw} service {infra.kw} hosting",
        "where does the service run?|hosting of services|infrastructure"),
    tpl(J, SEM, "The {repo} rewrite in {code_language} is due by the end of {quarter}.",
        "{repo.kw} rewrite {code_language.kw} deadline",
        "project deadlines|when is the rewrite due?"),
    tpl(J, SEM, "Plans another {minecraft_build} on the shared Minecraft server.",
        "minecraft {minecraft_build.kw} {minecraft_build.2} server",
        "Minecraft plans|what to build next?", "next I want to build another {minecraft_build}"),
    tpl(J, PRO, "Deploys {service} with `{deploy_command}` after running the test suite.",
        "deploy {deploy_command.kw} {service.kw} tests",
        "how does the user deploy?|release process|deployment steps",
        "I deploy {service} with {deploy_command} once tests pass", weight=1.5),
    tpl(J, PRO, "Runs `{check_command}` before opening a pull request.",
        "checks {check_command.kw} pull request",
        "what checks run before a PR?|pre-merge routine"),
    tpl(J, PRO, "Rebases feature branches on main every {weekday} morning.",
        "rebase branches {weekday.kw} git",
        "git workflow|how does the user keep branches fresh?"),
    tpl(J, PRO, "Releases {repo} by tagging a version and letting CI publish it.",
        "release {repo.kw} tag ci", "how are releases made?|release steps"),
    tpl(J, PRO, "Checks the {minecraft_build} after every Minecraft update.",
        "minecraft {minecraft_build.kw} update check", "Minecraft maintenance routine"),
    tpl(J, EPI, "Fixed the {bug} bug in the {service} service on {weekday}.",
        "bug {bug.kw} {service.kw} fix", "recent bug fixes|what broke recently?",
        "finally fixed that {bug} bug in {service}"),
    tpl(J, EPI, "The iron farm stopped working after the {release} update; villagers had lost "
        "their beds.", "minecraft iron farm update villagers",
        "why did the iron farm break?|Minecraft update problems",
        "my iron farm broke after {release}", weight=0.4),
    tpl(J, EPI, "Demoed {repo} to the {team} team on {weekday}; they asked for {code_language} "
        "bindings.", "demo {repo.kw} {team.kw} feedback",
        "feedback on demos|what did the team ask for?"),
    # decisions
    tpl(D, SEM, "Chose {choice} over {choice.2} for {repo}.",
        "chose {choice.kw} {choice.3} {repo.kw}", "tooling decisions|why this library?",
        "let's go with {choice}, not {choice.2}", weight=1.5),
    tpl(D, SEM, "Will keep {service} on {infra} until the end of {quarter}.",
        "{service.kw} {infra.kw} {quarter.kw} hosting",
        "infrastructure plans|migration timeline"),
    tpl(D, SEM, "Will drop {code_language} support from {repo} in the next major release.",
        "drop {code_language.kw} {repo.kw} support", "supported languages|what was dropped?"),
    tpl(D, SEM, "Standardised on {formatter} for all {formatter.2} repositories.",
        "standard {formatter.kw} repositories formatting",
        "which formatter is standard?|team conventions"),
    tpl(D, EPI, "In the {weekday} {meeting}, the team agreed to move {service} to {database}.",
        "agreed {service.kw} {database.kw} {meeting.kw}",
        "what was decided in the meeting?|database migration decision"),
    tpl(D, EPI, "Postponed the {repo} launch to {month} after the {bug} incident.",
        "postponed {repo.kw} launch {month.kw}", "why was the launch postponed?|launch date"),
    tpl(D, PRO, "Any schema change to {service} needs a review by {person} first.",
        "schema review {service.kw} {person.kw}", "who reviews schema changes?|change process"),
    # general
    tpl(G, SEM, "Supports {club}; do not schedule anything during their matches.",
        "football {club.kw} matches", "which team does the user support?|sports"),
    tpl(G, SEM, "Is reading {book}.", "reading book {book.kw}",
        "what is the user reading?|book recommendations", "I'm halfway through {book}"),
    tpl(G, SEM, "Plans a trip to {place} in {month}.", "trip {place.kw} {month.kw} travel",
        "upcoming travel|where is the user going?", "thinking about {place} in {month}"),
    tpl(G, SEM, "Favourite recipe to cook for friends is {recipe}.", "recipe {recipe.kw} cooking",
        "what does the user like to cook?|favourite dishes"),
    tpl(G, EPI, "Asked for a {recipe} recipe on a {day} evening.", "recipe {recipe.kw} asked",
        "recent recipe requests|cooking questions", "do you have a good {recipe} recipe?"),
    tpl(G, EPI, "Had trouble with the home Wi-Fi on {day}; restarting the router fixed it.",
        "wifi router trouble network", "home network problems|wifi issues"),
    tpl(G, EPI, "Went to {event} with {person} in {month}.", "{event.kw} {person.kw} {month.kw}",
        "recent events the user attended|conferences"),
    tpl(G, EPI, "Watched {club} win on {day} and was in a great mood afterwards.",
        "{club.kw} match mood", "how was the weekend?|football results"),
    tpl(G, PRO, "Backs up {backup_item} to {backup_target} every {day}.",
        "backup {backup_item.kw} {backup_target.kw} {day.kw}",
        "backup routine|where are backups kept?", "I back up {backup_item} every {day}"),
    tpl(G, PRO, "Waters the plants every {day} evening and logs it in plantlog.",
        "plants watering {day.kw} routine", "household routines|plant care"),
    tpl(G, PRO, "Reviews the week's calendar every {day} before dinner.",
        "calendar review {day.kw} planning", "weekly planning routine"),
)

# Paraphrases of one fact (each variant adds at most one keyword to its family's core): with
# vectors, consolidation merges those whose wording its guards let through.
FAMILIES: tuple[Template, ...] = (
    tpl(P, SEM, "Prefers dark mode in the editor ({dark_theme}).",
        "editor dark mode {dark_theme.kw}", "which editor theme does the user like?|dark mode",
        "dark mode in my editor, {dark_theme} please", family="dark-mode"),
    tpl(P, SEM, "Likes a dark editor theme, usually {dark_theme}.",
        "editor dark theme {dark_theme.kw}", "editor theme preference|dark mode",
        family="dark-mode"),
    tpl(P, SEM, "Uses dark mode when coding ({dark_theme}).", "editor dark coding {dark_theme.kw}",
        "dark mode|coding setup", family="dark-mode"),
    tpl(P, SEM, "Switches every editor to {dark_theme}, a dark theme.",
        "editor dark switches {dark_theme.kw}", "editor theme preference", family="dark-mode"),
    tpl(P, SEM, "Prefers replies in {language}.", "replies language {language.kw}",
        "which language should I answer in?|reply language", "please reply in {language}",
        family="reply-language"),
    tpl(P, SEM, "Wants the assistant to answer in {language}.",
        "replies language {language.kw} assistant", "reply language", family="reply-language"),
    tpl(P, SEM, "Likes to chat in {language} rather than English.",
        "replies language {language.kw} chat", "chat language", family="reply-language"),
    tpl(P, SEM, "Answers should be written in {language}.", "replies language {language.kw}",
        "reply language", family="reply-language"),
    tpl(G, SEM, "Weekly {meeting} is on {weekday}s at {clock}.",
        "weekly meeting {meeting.kw} {weekday.kw}", "when is the weekly meeting?|meeting time",
        "our {meeting} is every {weekday} at {clock}", family="meeting"),
    tpl(G, SEM, "The {meeting} happens every {weekday} at {clock}.",
        "weekly meeting {meeting.kw} {weekday.kw}", "meeting schedule", family="meeting"),
    tpl(G, SEM, "Has the weekly {meeting} each {weekday} at {clock}; keep that slot free.",
        "weekly meeting {meeting.kw} {weekday.kw} calendar", "calendar constraints",
        family="meeting"),
    tpl(G, SEM, "Every {weekday} at {clock} is the {meeting}.",
        "weekly meeting {meeting.kw} {weekday.kw}", "meeting time", family="meeting"),
    tpl(C, SEM, "{person}'s email is {person.2}.", "{person.kw} email colleague",
        "what is my colleague's email?|email addresses", "{person}'s address is {person.2}",
        family="email"),
    tpl(C, SEM, "Reach {person} at {person.2}.", "{person.kw} email colleague reach",
        "how to reach a colleague?", family="email"),
    tpl(C, SEM, "Colleague {person} uses {person.2} for email.", "{person.kw} email colleague",
        "colleague email addresses", family="email"),
    tpl(C, SEM, "Email for {person}: {person.2}.", "{person.kw} email colleague address",
        "contact details", family="email"),
    tpl(D, SEM, "Decided to use {database} for the {service} service.",
        "database {database.kw} {service.kw} decided",
        "which database for the service?|database decisions",
        "let's use {database} for {service}", family="database"),
    tpl(D, SEM, "Chose {database} as the database for {service}.",
        "database {database.kw} {service.kw} chose", "database decisions", family="database"),
    tpl(D, SEM, "The {service} service will store its data in {database}.",
        "database {database.kw} {service.kw}", "where is the data stored?", family="database"),
    tpl(D, SEM, "{database} is the database of record for {service}.",
        "database {database.kw} {service.kw} record", "database of record", family="database"),
    tpl(J, PRO, "Deploys with `{deploy_command}` after running the test suite.",
        "deploy tests {deploy_command.kw}", "how does the user deploy?|release process",
        "tests first, then {deploy_command}", family="deploy"),
    tpl(J, PRO, "Runs the test suite, then `{deploy_command}`, to deploy.",
        "deploy tests {deploy_command.kw} suite", "deployment steps", family="deploy"),
    tpl(J, PRO, "Only deploys through `{deploy_command}` once tests pass.",
        "deploy tests {deploy_command.kw} pass", "deploy rules", family="deploy"),
    tpl(J, PRO, "Never deploys without tests; uses `{deploy_command}`.",
        "deploy tests {deploy_command.kw}", "deploy rules", family="deploy"),
    tpl(J, SEM, "Is building an iron farm in Minecraft.", "minecraft iron farm building",
        "Minecraft projects|iron farm", "I'm building an iron farm", family="iron-farm"),
    tpl(J, SEM, "Working on a Minecraft iron farm.", "minecraft iron farm",
        "Minecraft projects", family="iron-farm"),
    tpl(J, SEM, "Plans a bigger iron farm in the Minecraft survival world.",
        "minecraft iron farm survival", "Minecraft plans", family="iron-farm"),
    tpl(J, SEM, "Has an iron farm project going in Minecraft.", "minecraft iron farm project",
        "Minecraft projects", family="iron-farm"),
    tpl(U, SEM, "Lives in {city}.", "home city {city.kw}", "where does the user live?",
        "I live in {city}", family="city"),
    tpl(U, SEM, "Is based in {city}.", "home city {city.kw} based", "user's location",
        family="city"),
    tpl(U, SEM, "Home city is {city}.", "home city {city.kw}", "home city", family="city"),
    tpl(U, SEM, "Moved to {city} and lives there now.", "home city {city.kw} moved",
        "user's location", family="city"),
)

# Clearly fake credentials and identifiers, for the sensitive scan to find.
SECRETS: tuple[Template, ...] = (
    tpl(G, SEM, "Home Wi-Fi password = hunter2-{wifi_word}", "wifi password home",
        "what is the wifi password?", "the wifi password = hunter2-{wifi_word}"),
    tpl(J, SEM, "Staging api key = {api_key} (demo value)", "staging api key",
        "staging credentials", "staging api key = {api_key}"),
    tpl(J, SEM, "CI calls the {service} API with Authorization: Bearer {jwt}",
        "ci bearer token {service.kw}", "how does CI authenticate?"),
    tpl(J, SEM, "Pasted a deploy key starting with -----BEGIN OPENSSH PRIVATE KEY----- "
        "(demo, not a real key).", "deploy key private", "deploy key"),
    tpl(J, SEM, "Server access key: ssh-ed25519 {ssh_key} {person.kw}@laptop",
        "ssh key server access", "which ssh key is used?"),
    tpl(U, SEM, "Card for team lunches: {card} (test card number).", "card lunches payment",
        "which card for lunches?", "use my card {card}"),
    tpl(U, SEM, "SSN for the tax form is {ssn} (sample number).", "tax form ssn",
        "tax form details", "my SSN is {ssn}"),
)

GENERIC_QUERIES = (
    "what do I know about the user?",
    "context for the next reply",
    "anything relevant to this conversation?",
)
DIRECTIVE_OPENERS = ("Remember: ", "Please remember this: ", "Note for later: ", "Don't forget: ")
CHAT_OPENERS = ("", "", "Also: ", "Oh, one more thing: ")
IMPORT_SOURCES = ("mem0", "openmemory", "letta", "mcp-memory")


@dataclass(frozen=True)
class Showcase:
    """A fixed memory of the showcase owner, with its traits, present in every demo store."""

    template: Template
    source: str
    tier: str = "long_term"
    decay_policy: str = "standard"
    protected: bool = False
    archived: bool = False
    accesses: int = 3
    age_days: float = 200.0
    user_requested: bool = False


def show(
    topic: str,
    memory_type: str,
    content: str,
    keywords: str,
    queries: str,
    said: str | None = None,
    *,
    source: str,
    health: bool = False,
    **traits: str | bool | int | float,
) -> Showcase:
    """A Showcase from compact arguments (its content and said are literal texts)."""
    template = tpl(topic, memory_type, content, keywords, queries, said, health=health)
    return Showcase(template, source, **traits)  # type: ignore[arg-type]


SHOWCASE_OWNER = "alice"
SHOWCASE: tuple[Showcase, ...] = (
    show(J, SEM, "Is building an iron farm in Minecraft: a compact 3-villager design next to "
         "the spawn chunks.", "minecraft iron farm villagers",
         "what is Alice building in Minecraft?|iron farm design",
         "I'm building an iron farm next to the spawn chunks", source="user_directive",
         accesses=14, age_days=320),
    show(P, SEM, "Prefers dark mode in the editor (Solarized Dark).",
         "editor dark mode theme solarized", "which editor theme does the user like?|dark mode",
         "dark mode in my editor please, Solarized Dark", source="user_directive",
         accesses=9, age_days=340),
    show(G, SEM, "Weekly team sync is on Tuesdays at 10:00 (Europe/Lisbon).",
         "weekly meeting sync tuesday", "when is the weekly meeting?|team sync time",
         "our team sync is every Tuesday at ten", source="background_scan", accesses=22,
         age_days=300, decay_policy="none"),
    show(C, SEM, "Colleague Sarah Chen's email is sarah.chen@northwind.example.",
         "sarah email colleague northwind", "what is Sarah's email?|colleague email",
         "you can email Sarah at sarah.chen@northwind.example", source="session_review",
         accesses=6, age_days=250),
    show(U, SEM, "Lives in Lisbon (Portugal); time zone Europe/Lisbon.",
         "city lisbon timezone home", "where does the user live?|user's time zone",
         "I live in Lisbon", source="user_directive", accesses=31, age_days=355,
         decay_policy="none", protected=True),
    show(U, SEM, "Name is Alice Moreau; prefers to be called Ali.", "name alice moreau nickname",
         "what is the user's name?|how to address the user",
         "I'm Alice Moreau, but call me Ali", source="user_directive", accesses=40,
         age_days=360, decay_policy="none", protected=True),
    show(P, SEM, "Likes a dark editor theme.", "editor dark mode theme",
         "editor theme preference", source="background_scan", accesses=2, age_days=180),
    show(P, SEM, "Uses dark mode when coding.", "editor dark mode coding", "dark mode",
         source="session_review", accesses=1, age_days=95),
    show(P, SEM, "Prefers replies in English, with code comments in Portuguese.",
         "replies english portuguese comments", "which language should I answer in?",
         "answer in English, but comments in Portuguese", source="user_directive",
         accesses=12, age_days=280),
    show(D, SEM, "Decided to use PostgreSQL for the billing service.",
         "database postgresql billing decided", "which database for billing?",
         "let's use PostgreSQL for billing", source="session_review", accesses=7,
         age_days=210),
    show(D, EPI, "In the March architecture review, the team chose Kafka over RabbitMQ for "
         "order events.", "kafka rabbitmq events architecture",
         "why Kafka?|messaging decision", source="session_review", accesses=6, age_days=200,
         tier="episodic"),
    show(J, PRO, "Deploys with `make release` after running the test suite.",
         "deploy release tests make", "how does Alice deploy?|release process",
         "tests first, then make release", source="user_directive", accesses=11,
         age_days=260),
    show(J, PRO, "Runs `ruff check` and `pytest -q` before every push.",
         "ruff pytest push checks", "pre-push checks", source="background_scan", accesses=4,
         age_days=150),
    show(U, SEM, "Is allergic to peanuts; never suggest recipes with nuts.",
         "allergy peanuts health recipes", "does the user have allergies?",
         "I'm allergic to peanuts, please remember that", source="user_directive",
         health=True, accesses=3, age_days=230, user_requested=True, protected=True),
    show(G, SEM, "Home Wi-Fi password = hunter2-lisbon", "wifi password home",
         "what is the wifi password?", "the wifi password = hunter2-lisbon",
         source="background_scan", accesses=1, age_days=60),
    show(J, SEM, "Staging api key = sk-demo-7f3a9c2e5b1d4f60a8e2c9b7 (demo value)",
         "staging api key", "staging credentials", source="background_scan", accesses=0,
         age_days=20),
    show(C, SEM, "Manager is Daniel Okafor (daniel.okafor@northwind.example).",
         "manager daniel okafor northwind", "who is Alice's manager?",
         "my manager is Daniel Okafor", source="user_directive", accesses=8, age_days=330),
    show(P, SEM, "Prefers short answers with bullet points.", "answers short bullets style",
         "how should answers be formatted?", "short answers, bullet points",
         source="user_directive", accesses=26, age_days=345),
    show(P, PRO, "Wants Python examples with type hints and a short test.",
         "python examples hints tests", "code example style", source="session_review",
         accesses=10, age_days=170),
    show(U, SEM, "Works at Northwind Analytics as a data engineer.",
         "work northwind data engineer", "where does the user work?",
         "I'm a data engineer at Northwind", source="background_scan", accesses=15,
         age_days=350),
    show(J, EPI, "The iron farm stopped working after the 1.21 update; villagers had lost "
         "their beds.", "minecraft iron farm update villagers",
         "why did the iron farm break?", "my iron farm broke after 1.21",
         source="session_review", accesses=2, age_days=110, tier="episodic"),
    show(J, PRO, "Checks the iron farm's golem spawning platform after each Minecraft update.",
         "minecraft iron farm golem update", "Minecraft maintenance routine",
         source="session_review", accesses=3, age_days=100),
    show(G, EPI, "Asked for a sourdough recipe on a Sunday evening in May.",
         "recipe sourdough asked", "recent recipe requests",
         "do you have a good sourdough recipe?", source="background_scan", accesses=1,
         age_days=140, tier="episodic"),
    show(G, SEM, "Plays Minecraft with her brother on Friday evenings.",
         "minecraft brother friday games", "Alice's evenings", source="background_scan",
         accesses=5, age_days=290),
    show(J, SEM, "Is debugging a flaky test in the payments repository this week.",
         "flaky test payments debugging", "what is Alice working on right now?",
         source="session_review", accesses=3, age_days=4, tier="working",
         decay_policy="aggressive"),
    show(G, EPI, "Was travelling to Porto on 12 March and asked for train times.",
         "travel porto train march", "recent trips", source="background_scan", accesses=1,
         age_days=190, tier="episodic", archived=True),
    show(D, SEM, "Will move CI from Jenkins to GitHub Actions by the end of Q3.",
         "jenkins actions migration q3", "CI migration plan", source="session_review",
         accesses=6, age_days=120),
    show(C, SEM, "Sister Marta lives in Porto and visits every other month.",
         "sister marta porto family", "Alice's family", source="background_scan",
         accesses=2, age_days=75),
    show(U, SEM, "Has a cat called Pixel.", "pet cat pixel", "does the user have pets?",
         "my cat Pixel says hi", source="background_scan", accesses=4, age_days=160),
    show(D, PRO, "Any schema change to billing needs a review by Sarah Chen first.",
         "schema review billing sarah", "who reviews schema changes?", source="manual",
         accesses=2, age_days=85),
)

# fmt: on

SLOT = re.compile(r"\{([a-z_]+?)(\d?)(?:\.(kw|\d))?\}")


@dataclass(frozen=True)
class Compiled:
    """A template as positional format strings over its slot values, in slot order."""

    template: Template
    pool_names: tuple[str, ...]
    pools: tuple[tuple[tuple[str, ...], ...], ...]
    repeats: tuple[int | None, ...]  # per slot: the earlier slot drawing from the same pool
    content: str
    keywords_json: str
    said: str | None


def compile_template(template: Template) -> Compiled:
    """Turn `{city}`, `{city.kw}`, `{city.2}` into `{0[0]}`, `{0[1]}`, `{0[2]}`."""
    order: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) + match.group(2)
        if name not in order:
            order.append(name)
        field = {None: "0", "kw": "1"}.get(match.group(3), match.group(3))
        return f"{{{order.index(name)}[{field}]}}"

    content = SLOT.sub(replace, template.content)
    words = [SLOT.sub(replace, word) for word in template.keywords.split()]
    said = SLOT.sub(replace, template.said) if template.said else None
    names = [name.rstrip("0123456789") for name in order]
    repeats = tuple(
        names.index(name) if names.index(name) < i else None for i, name in enumerate(names)
    )
    return Compiled(
        template=template,
        pool_names=tuple(names),
        pools=tuple(POOLS[name] for name in names),
        repeats=repeats,
        content=content,
        keywords_json="[" + ", ".join(f'"{word}"' for word in words) + "]",
        said=said,
    )


def object_array(items: Any) -> NDArray[np.object_]:
    """A 1-D object array of `items` (tuples stay whole)."""
    array = np.empty(len(items), dtype=object)
    array[:] = list(items)
    return array


def title_of(text: str) -> str:
    """validate.default_title for single-spaced, one-line text with no `!` or `?` stops."""
    cut = text.find(". ")
    if 0 < cut < TITLE_LENGTH:
        return text[: cut + 1].rstrip()
    return text if len(text) <= TITLE_LENGTH else text[: TITLE_LENGTH - 1].rstrip() + "…"


class Catalog:
    """Every template (showcase, bulk, families, secrets) by template id, ready to render."""

    def __init__(self) -> None:
        showcase = [item.template for item in SHOWCASE]
        templates = [*showcase, *TEMPLATES, *FAMILIES, *SECRETS]
        self.compiled = [compile_template(t) for t in templates]
        bounds = np.cumsum([0, len(showcase), len(TEMPLATES), len(FAMILIES), len(SECRETS)])
        self.showcase, self.regular, _, self.secrets = (
            np.arange(bounds[i], bounds[i + 1]) for i in range(4)
        )
        firsts = [i for i, t in enumerate(FAMILIES) if i == 0 or t.family != FAMILIES[i - 1].family]
        self.families = np.array(firsts, dtype=np.int64) + bounds[2]
        self.topic = object_array([t.topic for t in templates])
        self.memory_type = object_array([t.memory_type for t in templates])
        self.health = np.array([t.health for t in templates])
        self.max_slots = max(len(c.pools) for c in self.compiled)
        self.pools = {name: object_array(pool) for name, pool in POOLS.items()}
        queries = [t.queries for t in templates]
        self.query_start = np.cumsum([0] + [len(q) for q in queries[:-1]])
        self.query_count = np.array([len(q) for q in queries])
        self.queries = object_array([q for group in queries for q in group])

    def regular_weights(self) -> NDArray[np.float64]:
        """Chance of each bulk template: topic share x type share x its weight in the pair."""
        totals: dict[tuple[str, str], float] = {}
        for t in TEMPLATES:
            totals[(t.topic, t.memory_type)] = totals.get((t.topic, t.memory_type), 0.0) + t.weight
        weights = np.array(
            [
                TOPIC_WEIGHTS[t.topic]
                * TYPE_WEIGHTS[t.topic][t.memory_type]
                * t.weight
                / totals[(t.topic, t.memory_type)]
                for t in TEMPLATES
            ]
        )
        return weights / weights.sum()

    def render(
        self, templates: NDArray[np.int64], draws: NDArray[np.int64], quoted: NDArray[np.bool_]
    ) -> tuple[list[str], list[str], list[str], NDArray[np.object_]]:
        """Titles, contents, keyword JSON and (where `quoted`) the user's words, one template
        at a time."""
        size = len(templates)
        body = np.empty(size, dtype=object)
        keywords = np.empty(size, dtype=object)
        said = np.full(size, None, dtype=object)
        order = np.argsort(templates, kind="stable")
        cuts = np.flatnonzero(np.diff(templates[order])) + 1
        for rows in np.split(order, cuts) if size else []:
            compiled = self.compiled[templates[rows[0]]]
            values = self.slot_values(compiled, draws[rows])
            body[rows] = object_array([compiled.content.format(*v) for v in values])
            keywords[rows] = object_array([compiled.keywords_json.format(*v) for v in values])
            if compiled.said is not None:
                wanted = np.flatnonzero(quoted[rows])
                said[rows[wanted]] = object_array(
                    [compiled.said.format(*values[i]) for i in wanted.tolist()]
                )
        contents = body.tolist()
        return [title_of(text) for text in contents], contents, keywords.tolist(), said

    def slot_values(self, compiled: Compiled, draws: NDArray[np.int64]) -> list[tuple[Any, ...]]:
        """Each row's slot values (a tuple per slot); a pool drawn twice never repeats a value."""
        if not compiled.pools:
            return [()] * len(draws)
        chosen: list[NDArray[np.int64]] = []
        columns = []
        for j, name in enumerate(compiled.pool_names):
            pool = self.pools[name]
            index = draws[:, j] % len(pool)
            earlier = compiled.repeats[j]
            if earlier is not None:
                index = (chosen[earlier] + 1 + draws[:, j] % (len(pool) - 1)) % len(pool)
            chosen.append(index)
            columns.append(pool[index])
        return list(zip(*columns, strict=True))
