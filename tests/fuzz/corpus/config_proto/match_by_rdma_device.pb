
roced/v1
NodeConfig"
rxe0¨F