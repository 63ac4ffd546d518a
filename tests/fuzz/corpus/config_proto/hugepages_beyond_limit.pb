
roced/v1
NodeConfig*
2Mi€