-- The result store's own database and role (the Temporal server uses its own databases).
CREATE ROLE scrapes LOGIN PASSWORD 'scrapes';
CREATE DATABASE scrapes OWNER scrapes;
