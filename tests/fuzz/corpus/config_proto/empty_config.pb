
roced/v1
NodeConfig