"""The AI colleagues of an office."""

from decimal import Decimal

from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

hex_colour = RegexValidator(r"^#[0-9a-fA-F]{6}$", "Use a colour like #3b82f6.")


class Coworker(models.Model):
    office = models.ForeignKey("office.Office", on_delete=models.CASCADE, related_name="coworkers")
    name = models.CharField(max_length=60)
    # The handle people @mention and history records carry ("coworker": "mina").
    slug = models.SlugField(max_length=60)
    role = models.CharField(max_length=100)
    persona = models.TextField(help_text="The coworker's system prompt: who they are and how they work.")
    skills = models.JSONField(default=list, blank=True, help_text='A list of skills, e.g. ["copywriting", "SEO"].')
    model = models.CharField(
        max_length=100, blank=True, help_text="Model name for replies; empty uses the context policy's."
    )
    colour = models.CharField(max_length=7, default="#6366f1", validators=[hex_colour])
    monthly_limit_usd = models.DecimalField(
        "monthly spending limit (US$)", max_digits=9, decimal_places=2, null=True, blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text="Once this calendar month's replies (UTC) have cost this much, the coworker stops answering "
        "and says so, until the month ends or the limit is raised. Empty: no limit.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["office", "name"]
        constraints = [models.UniqueConstraint(fields=["office", "slug"], name="unique_coworker_slug_per_office")]

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"
