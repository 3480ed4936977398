"""The MCP server of the `evals/mcp` suite: a shop's 240 orders and 40
customers, as a real server on the official Python SDK (`mcp` 2.x,
MCPServer) would serve them. The data is made by arithmetic, not chance,
so every run (and every machine) sees the same records and the suite's
answers hold.

    python3 shop_server.py            # stdio, as clix-eval starts it
    python3 shop_server.py --answers  # the suite's expected answers, computed here
"""

import sys
from enum import Enum
from typing import Optional

from typing_extensions import TypedDict

REGIONS = ["EU", "US", "APAC"]
TIERS = ["gold", "silver", "bronze"]
STATUSES = ["shipped", "pending", "cancelled", "returned", "shipped", "shipped", "pending"]
FIRST = ["ada", "ben", "cleo", "dev", "eli", "fay", "gus", "hana", "ivan", "jo"]
LAST = ["smith", "khan", "lopez", "ng"]


class Status(str, Enum):
    shipped = "shipped"
    pending = "pending"
    cancelled = "cancelled"
    returned = "returned"


class Tier(str, Enum):
    gold = "gold"
    silver = "silver"
    bronze = "bronze"


class Customer(TypedDict):
    id: str
    name: str
    email: str
    tier: str
    region: str


class Order(TypedDict):
    id: str
    customer_id: str
    region: str
    status: str
    amount_cents: int
    items: int
    placed: str


class Orders(TypedDict):
    orders: list[Order]


class Customers(TypedDict):
    customers: list[Customer]


def customers() -> list[Customer]:
    out = []
    for i in range(40):
        name = f"{FIRST[i % 10]} {LAST[i // 10]}"
        out.append(
            {
                "id": f"C{i + 1:03d}",
                "name": name,
                "email": f"{name.replace(' ', '.')}@example.com",
                "tier": TIERS[(i * 7) % 3],
                "region": REGIONS[(i * 5) % 3],
            }
        )
    return out


def orders() -> list[Order]:
    people = customers()
    out = []
    for i in range(240):
        who = people[(i * 7 + i // 40) % 40]
        # One order stands out: the largest amount, unique.
        amount = 98_765 if i == 173 else 1_000 + (i * 3_719) % 48_000
        out.append(
            {
                "id": f"O-{1001 + i}",
                "customer_id": who["id"],
                "region": who["region"],
                "status": STATUSES[(i * 3 + i // 7) % 7],
                "amount_cents": amount,
                "items": 1 + (i * 5) % 6,
                "placed": f"2026-{1 + i % 12:02d}-{1 + (i * 11) % 28:02d}",
            }
        )
    return out


def answers() -> dict:
    all_orders = orders()
    people = {c["id"]: c for c in customers()}
    pending = sum(1 for o in all_orders if o["status"] == "pending")
    eu_shipped = sum(o["amount_cents"] for o in all_orders if o["status"] == "shipped" and o["region"] == "EU")
    watch = ["C003", "C014", "C022", "C031", "C038"]
    watched = sum(1 for o in all_orders if o["customer_id"] in watch)
    largest = max(all_orders, key=lambda o: o["amount_cents"])
    spent: dict = {}
    for o in all_orders:
        if o["status"] == "shipped":
            spent[o["customer_id"]] = spent.get(o["customer_id"], 0) + o["amount_cents"]
    top = sorted(spent.items(), key=lambda kv: -kv[1])
    return {
        "pending": pending,
        "eu_shipped_dollars": f"{eu_shipped / 100:.2f}",
        "watched_orders": watched,
        "largest": largest["id"],
        "top_spender": top[0],
        "runner_up": top[1],
        "top_spender_email": people[top[0][0]]["email"],
    }


def serve() -> None:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    app = MCPServer("shop")

    @app.tool()
    def list_orders(status: Optional[Status] = None) -> Orders:
        """Lists the shop's orders (all, or those of one status): id, customer, region, status, amount, items, date."""
        found = [o for o in orders() if status is None or o["status"] == status.value]
        return {"orders": found}

    @app.tool()
    def list_customers(tier: Optional[Tier] = None) -> Customers:
        """Lists the shop's customers (all of them, or those of one tier) with their name, email, tier and region."""
        return {"customers": [c for c in customers() if tier is None or c["tier"] == tier.value]}

    @app.tool()
    def get_customer(customer_id: str) -> Customer:
        """One customer by id (C001…C040): name, email, tier and region."""
        for c in customers():
            if c["id"] == customer_id:
                return c
        raise ToolError(f"no customer {customer_id}; ids run from C001 to C040")

    app.run()


if __name__ == "__main__":
    if sys.argv[1:] == ["--answers"]:
        print(answers())
    else:
        serve()
