from happy_launcher.cli.app import main

main()
